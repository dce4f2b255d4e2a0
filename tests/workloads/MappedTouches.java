import java.io.File;
import java.io.RandomAccessFile;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;

/**
 * Page faults in Java code, whose faulting addresses the kernel reports
 * (tests/tests/agent_data.rs): one byte stored per page of a mapped, sparse file; the file is
 * then cut to nothing and grown again, which takes its pages out of the mapping, so the next
 * round faults on every page again. Once compiled, MappedByteBuffer.put(int, byte) is a single
 * store instruction in JIT code, so a page-fault sample's instruction can be decoded and its
 * address checked against the kernel's.
 *
 * Usage: java MappedTouches ROUNDS [MEGABYTES]
 */
public class MappedTouches {
    public static void main(String[] args) throws Exception {
        int rounds = Integer.parseInt(args[0]);
        long size = (args.length > 1 ? Long.parseLong(args[1]) : 32) << 20;
        File f = File.createTempFile("hpm-touches", ".bin");
        f.deleteOnExit();
        try (RandomAccessFile file = new RandomAccessFile(f, "rw"); FileChannel ch = file.getChannel()) {
            file.setLength(size);
            MappedByteBuffer buf = ch.map(FileChannel.MapMode.READ_WRITE, 0, size);
            long touched = 0;
            for (int r = 0; r < rounds; r++) {
                touched += touch(buf, (int) size, (byte) r);
                file.setLength(0);
                file.setLength(size);
            }
            System.out.println("touched " + touched + " pages");
        }
        f.delete();
    }

    static long touch(MappedByteBuffer buf, int size, byte v) {
        long n = 0;
        for (int i = 0; i < size; i += 4096) {
            buf.put(i, v);
            n++;
        }
        return n;
    }
}
