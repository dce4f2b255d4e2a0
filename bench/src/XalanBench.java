import java.io.StringReader;
import java.io.StringWriter;
import java.util.concurrent.ExecutorService;
import javax.xml.transform.Templates;
import javax.xml.transform.Transformer;
import javax.xml.transform.stream.StreamResult;
import javax.xml.transform.stream.StreamSource;

/**
 * Xalan-J (Debian `libxalan2-java`, interpretive processor as in DaCapo's xalan): per
 * iteration, THREADS workers each transform DOCS generated XML catalogues to HTML with one
 * compiled stylesheet (sorting, grouping by key, number formatting, string functions).
 *
 *   java XalanBench ITERATIONS [THREADS] [DOCS] [ITEMS]
 */
public class XalanBench {
    static final String XSL = String.join("\n",
        "<xsl:stylesheet version='1.0' xmlns:xsl='http://www.w3.org/1999/XSL/Transform'>",
        "<xsl:key name='by-cat' match='item' use='@cat'/>",
        "<xsl:template match='/catalog'><html><body>",
        "<xsl:for-each select='item[generate-id() = generate-id(key(\"by-cat\", @cat)[1])]'>",
        "<xsl:sort select='@cat'/>",
        "<h2><xsl:value-of select='@cat'/> (<xsl:value-of select='count(key(\"by-cat\", @cat))'/>)</h2>",
        "<table><xsl:for-each select='key(\"by-cat\", @cat)'><xsl:sort select='price' data-type='number' order='descending'/>",
        "<tr><td><xsl:value-of select='translate(name, \"abcdefghij\", \"ABCDEFGHIJ\")'/></td>",
        "<td><xsl:value-of select='format-number(price * qty, \"#,##0.00\")'/></td>",
        "<td><xsl:if test='contains(desc, \"ab\")'>*</xsl:if><xsl:value-of select='substring(desc, 1, 20)'/></td></tr>",
        "</xsl:for-each></table>",
        "<p>total <xsl:value-of select='format-number(sum(key(\"by-cat\", @cat)/price), \"0.00\")'/></p>",
        "</xsl:for-each></body></html></xsl:template></xsl:stylesheet>");

    public static void main(String[] args) throws Exception {
        int threads = args.length > 1 ? Integer.parseInt(args[1]) : 4;
        int docs = args.length > 2 ? Integer.parseInt(args[2]) : 10;
        int items = args.length > 3 ? Integer.parseInt(args[3]) : 2000;
        String[] inputs = new String[threads];
        for (int w = 0; w < threads; w++) inputs[w] = catalog(new Harness.Words(w, 5000), items);
        Templates templates = new org.apache.xalan.processor.TransformerFactoryImpl()
                .newTemplates(new StreamSource(new StringReader(XSL)));
        ExecutorService pool = Harness.pool("xalan", threads);
        Harness.iterate("xalan", Harness.iterations(args, 10), it ->
            Harness.parallel(pool, threads, w -> {
                for (int d = 0; d < docs; d++) {
                    Transformer t = templates.newTransformer();
                    StringWriter out = new StringWriter();
                    t.transform(new StreamSource(new StringReader(inputs[w])), new StreamResult(out));
                    if (out.getBuffer().length() == 0) throw new IllegalStateException("empty output");
                }
            }));
        pool.shutdown();
    }

    static String catalog(Harness.Words words, int items) {
        StringBuilder b = new StringBuilder("<?xml version='1.0'?>\n<catalog>\n");
        for (int i = 0; i < items; i++) {
            b.append("<item id='").append(i).append("' cat='c").append(words.nextInt(40)).append("'>")
             .append("<name>").append(words.sentence(3)).append("</name>")
             .append("<price>").append(words.nextInt(100000) / 100.0).append("</price>")
             .append("<qty>").append(1 + words.nextInt(50)).append("</qty>")
             .append("<desc>").append(words.sentence(15)).append("</desc></item>\n");
        }
        return b.append("</catalog>\n").toString();
    }
}
