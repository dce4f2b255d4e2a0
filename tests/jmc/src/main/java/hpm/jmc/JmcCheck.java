package hpm.jmc;

import java.io.File;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;

import org.openjdk.jmc.common.item.IAccessorKey;
import org.openjdk.jmc.common.item.IItemCollection;
import org.openjdk.jmc.common.item.IItemIterable;
import org.openjdk.jmc.flightrecorder.JfrLoaderToolkit;

/**
 * Loads each .jfr file given with JDK Mission Control's parser and prints, per file,
 * {@code FILE\tTYPE\tCOUNT} for every event type with events, and
 * {@code FILE\tTYPE\tfields\tA,B,...} (the attribute identifiers JMC sees) for hpm's own types.
 * Any parse error prints {@code hpm-jmc: FILE: ...} and exits with status 1.
 */
public final class JmcCheck {
    public static void main(String[] args) {
        if (args.length == 0) {
            System.err.println("usage: JmcCheck FILE.jfr...");
            System.exit(2);
        }
        int failed = 0;
        for (String path : args) {
            try {
                IItemCollection events = JfrLoaderToolkit.loadEvents(new File(path));
                Map<String, Long> counts = new TreeMap<>();
                Map<String, TreeSet<String>> fields = new TreeMap<>();
                for (IItemIterable items : events) {
                    String type = items.getType().getIdentifier();
                    counts.merge(type, items.getItemCount(), Long::sum);
                    if (type.startsWith("hpm.")) {
                        TreeSet<String> f = fields.computeIfAbsent(type, t -> new TreeSet<>());
                        for (IAccessorKey<?> key : items.getType().getAccessorKeys().keySet()) {
                            f.add(key.getIdentifier());
                        }
                    }
                }
                for (Map.Entry<String, Long> e : counts.entrySet()) {
                    System.out.println(path + "\t" + e.getKey() + "\t" + e.getValue());
                }
                for (Map.Entry<String, TreeSet<String>> e : fields.entrySet()) {
                    System.out.println(path + "\t" + e.getKey() + "\tfields\t" + String.join(",", e.getValue()));
                }
            } catch (Exception | LinkageError e) {
                System.err.println("hpm-jmc: " + path + ": JMC could not parse it: " + e);
                failed++;
            }
        }
        System.exit(failed == 0 ? 0 : 1);
    }
}
