import java.util.concurrent.ExecutorService;
import org.apache.lucene.analysis.standard.StandardAnalyzer;
import org.apache.lucene.document.Document;
import org.apache.lucene.document.Field;
import org.apache.lucene.document.StringField;
import org.apache.lucene.document.TextField;
import org.apache.lucene.index.DirectoryReader;
import org.apache.lucene.index.IndexWriter;
import org.apache.lucene.index.IndexWriterConfig;
import org.apache.lucene.index.Term;
import org.apache.lucene.search.BooleanClause;
import org.apache.lucene.search.BooleanQuery;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.search.PhraseQuery;
import org.apache.lucene.search.Query;
import org.apache.lucene.search.TermQuery;
import org.apache.lucene.store.ByteBuffersDirectory;

/**
 * Lucene 8 (Debian `liblucene8-java`): per iteration, indexes DOCS generated documents
 * (fixed seed, skewed vocabulary) into an in-memory directory, then THREADS searchers run
 * QUERIES term, boolean and phrase queries each against it.
 *
 *   java LuceneBench ITERATIONS [THREADS] [DOCS] [QUERIES]
 */
public class LuceneBench {
    public static void main(String[] args) throws Exception {
        int threads = args.length > 1 ? Integer.parseInt(args[1]) : 4;
        int docs = args.length > 2 ? Integer.parseInt(args[2]) : 20_000;
        int queries = args.length > 3 ? Integer.parseInt(args[3]) : 3000;
        ExecutorService pool = Harness.pool("lucene", threads);
        Harness.iterate("lucene", Harness.iterations(args, 10), it -> {
            ByteBuffersDirectory dir = new ByteBuffersDirectory();
            Harness.Words words = new Harness.Words(7, 20_000);
            try (IndexWriter w = new IndexWriter(dir, new IndexWriterConfig(new StandardAnalyzer()))) {
                for (int d = 0; d < docs; d++) {
                    Document doc = new Document();
                    doc.add(new StringField("id", "doc" + d, Field.Store.YES));
                    doc.add(new TextField("title", words.sentence(6), Field.Store.YES));
                    doc.add(new TextField("body", words.sentence(80 + words.nextInt(120)), Field.Store.NO));
                    w.addDocument(doc);
                }
            }
            try (DirectoryReader reader = DirectoryReader.open(dir)) {
                IndexSearcher searcher = new IndexSearcher(reader);
                Harness.parallel(pool, threads, worker -> {
                    Harness.Words q = new Harness.Words(100 + worker, 20_000);
                    long hits = 0;
                    for (int i = 0; i < queries; i++) {
                        Query query;
                        switch (i % 3) {
                            case 0: query = new TermQuery(new Term("body", q.next())); break;
                            case 1: query = new BooleanQuery.Builder()
                                    .add(new TermQuery(new Term("body", q.next())), BooleanClause.Occur.MUST)
                                    .add(new TermQuery(new Term("body", q.next())), BooleanClause.Occur.SHOULD)
                                    .add(new TermQuery(new Term("title", q.next())), BooleanClause.Occur.SHOULD).build(); break;
                            default: query = new PhraseQuery(1, "body", q.next(), q.next());
                        }
                        hits += searcher.search(query, 10).totalHits.value;
                    }
                    if (hits < 0) throw new IllegalStateException();
                });
            }
        });
        pool.shutdown();
    }
}
