// Reads a JFR file with the JDK's own consumer API and prints what it saw:
//   java Check.java file.jfr
// Output lines: `count <event type> <n>`, `sum <hpm.Sample long field> <total>`,
// `frames <total stack frames>`, `threads <distinct sampled thread names, comma-separated>`.
// Every event is also formatted with toString(), which touches every field the way
// `jfr print` does, so unresolvable references or bad descriptors fail here.

import java.nio.file.Path;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;

import jdk.jfr.ValueDescriptor;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedFrame;
import jdk.jfr.consumer.RecordedThread;
import jdk.jfr.consumer.RecordingFile;

public class Check {
    public static void main(String[] args) throws Exception {
        Map<String, Long> counts = new TreeMap<>();
        Map<String, Long> sums = new TreeMap<>();
        TreeSet<String> threads = new TreeSet<>();
        long frames = 0;
        try (RecordingFile f = new RecordingFile(Path.of(args[0]))) {
            while (f.hasMoreEvents()) {
                RecordedEvent e = f.readEvent();
                String name = e.getEventType().getName();
                counts.merge(name, 1L, Long::sum);
                if (e.toString().isEmpty()) {
                    throw new IllegalStateException("empty event text");
                }
                if (e.hasField("sampledThread")) {
                    RecordedThread t = e.getThread("sampledThread");
                    threads.add(t.getJavaName() != null ? t.getJavaName() : t.getOSName());
                }
                if (e.getStackTrace() != null) {
                    for (RecordedFrame fr : e.getStackTrace().getFrames()) {
                        fr.getMethod().getType().getName();
                        fr.getType();
                        frames++;
                    }
                }
                if (name.equals("hpm.Sample")) {
                    for (ValueDescriptor v : e.getFields()) {
                        if (v.getTypeName().equals("long") && !v.getName().equals("startTime")) {
                            sums.merge(v.getName(), e.getLong(v.getName()), Long::sum);
                        }
                    }
                }
            }
        }
        counts.forEach((k, v) -> System.out.println("count " + k + " " + v));
        sums.forEach((k, v) -> System.out.println("sum " + k + " " + v));
        System.out.println("frames " + frames);
        System.out.println("threads " + String.join(",", threads));
    }
}
