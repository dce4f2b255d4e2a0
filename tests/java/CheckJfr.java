import java.nio.file.Path;
import java.util.Map;
import java.util.TreeMap;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedFrame;
import jdk.jfr.consumer.RecordedStackTrace;
import jdk.jfr.consumer.RecordingFile;

/**
 * Reads a JFR file with the JDK's own parser (jdk.jfr.consumer.RecordingFile) and prints what
 * the Rust tests compare with the agent's other outputs, one "key value" per line:
 *   count EVENT_TYPE N          events per type
 *   top FRAME N                 jdk.ExecutionSample top frames (Class.method)
 *   frametype TYPE N            frame types over all ExecutionSample frames
 *   field EVENT.FIELD present   fields of the first event of each hpm.* type
 *   sum hpm.Sample.FIELD N      sum of a long field of hpm.Sample
 *   own-samples N               hpm.Sample events of period 0: a counter's own overflow samples
 *   lines-positive N / lines-total N   Java frames with a line number > 0
 *   class-lines-positive N / class-lines-total N   the same for frames of the class named by
 *                               the second argument (hidden lambda classes have no line table)
 *   threads N                   distinct sampled threads
 *   truncated N                 jdk.ExecutionSample stacks marked truncated
 *   max-depth N                 frames of the deepest jdk.ExecutionSample stack
 */
public class CheckJfr {
    public static void main(String[] args) throws Exception {
        Map<String, Long> counts = new TreeMap<>();
        Map<String, Long> tops = new TreeMap<>();
        Map<String, Long> types = new TreeMap<>();
        Map<String, Long> sums = new TreeMap<>();
        Map<String, String> fields = new TreeMap<>();
        java.util.Set<String> threads = new java.util.TreeSet<>();
        long own = 0;
        long linesPositive = 0, linesTotal = 0, classPositive = 0, classTotal = 0, truncated = 0, maxDepth = 0;
        String cls = args.length > 1 ? args[1] : "";
        for (RecordedEvent e : RecordingFile.readAllEvents(Path.of(args[0]))) {
            String name = e.getEventType().getName();
            counts.merge(name, 1L, Long::sum);
            if (name.startsWith("hpm.")) {
                for (var f : e.getFields()) {
                    fields.putIfAbsent(name + "." + f.getName(), "present");
                    if (name.equals("hpm.Sample") && f.getTypeName().equals("long")) {
                        sums.merge(f.getName(), e.getLong(f.getName()), Long::sum);
                    }
                }
            }
            if (name.equals("hpm.Sample") && e.getLong("period") == 0) own++;
            if (!name.equals("jdk.ExecutionSample")) continue;
            threads.add(e.getThread("sampledThread").getJavaName() + "/" + e.getThread("sampledThread").getOSThreadId());
            RecordedStackTrace st = e.getStackTrace();
            if (st == null || st.getFrames().isEmpty()) continue;
            if (st.isTruncated()) truncated++;
            maxDepth = Math.max(maxDepth, st.getFrames().size());
            RecordedFrame top = st.getFrames().get(0);
            tops.merge(frameName(top), 1L, Long::sum);
            for (RecordedFrame f : st.getFrames()) {
                types.merge(f.getType().replace(' ', '_'), 1L, Long::sum);
                if (f.isJavaFrame()) {
                    linesTotal++;
                    if (f.getLineNumber() > 0) linesPositive++;
                    if (f.getMethod().getType().getName().equals(cls)) {
                        classTotal++;
                        if (f.getLineNumber() > 0 && f.getBytecodeIndex() >= 0) classPositive++;
                    }
                }
            }
        }
        counts.forEach((k, v) -> System.out.println("count " + k + " " + v));
        tops.forEach((k, v) -> System.out.println("top " + k + " " + v));
        types.forEach((k, v) -> System.out.println("frametype " + k + " " + v));
        fields.forEach((k, v) -> System.out.println("field " + k + " " + v));
        sums.forEach((k, v) -> System.out.println("sum hpm.Sample." + k + " " + v));
        System.out.println("own-samples " + own);
        System.out.println("lines-positive " + linesPositive);
        System.out.println("lines-total " + linesTotal);
        System.out.println("class-lines-positive " + classPositive);
        System.out.println("class-lines-total " + classTotal);
        System.out.println("threads " + threads.size());
        System.out.println("truncated " + truncated);
        System.out.println("max-depth " + maxDepth);
    }

    static String frameName(RecordedFrame f) {
        String cls = f.getMethod().getType().getName();
        String m = f.getMethod().getName();
        return (cls == null || cls.isEmpty() ? "" : cls + ".") + m;
    }
}
