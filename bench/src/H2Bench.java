import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.Random;
import java.util.concurrent.ExecutorService;

/**
 * H2 (Debian `libh2-java`): an in-memory database with a TPC-B-like schema; per iteration,
 * THREADS clients each run TRANSACTIONS transactions on their own connection (update an account,
 * a teller and a branch, insert a history row, read the balance back), plus one report query.
 *
 *   java H2Bench ITERATIONS [THREADS] [TRANSACTIONS]
 */
public class H2Bench {
    static final int BRANCHES = 10, TELLERS = 100, ACCOUNTS = 100_000;

    public static void main(String[] args) throws Exception {
        int threads = args.length > 1 ? Integer.parseInt(args[1]) : 4;
        int transactions = args.length > 2 ? Integer.parseInt(args[2]) : 4000;
        String url = "jdbc:h2:mem:bench;LOCK_TIMEOUT=10000";
        try (Connection setup = DriverManager.getConnection(url, "sa", "")) {
            try (Statement s = setup.createStatement()) {
                s.execute("create table branch(id int primary key, balance bigint)");
                s.execute("create table teller(id int primary key, branch int, balance bigint)");
                s.execute("create table account(id int primary key, branch int, balance bigint, filler varchar(80))");
                s.execute("create table history(id identity, account int, teller int, branch int, delta bigint, at timestamp)");
                s.execute("insert into branch select x, 0 from system_range(0, " + (BRANCHES - 1) + ")");
                s.execute("insert into teller select x, mod(x, " + BRANCHES + "), 0 from system_range(0, " + (TELLERS - 1) + ")");
                s.execute("insert into account select x, mod(x, " + BRANCHES + "), 0, repeat('x', 60) from system_range(0, " + (ACCOUNTS - 1) + ")");
            }
            ExecutorService pool = Harness.pool("h2", threads);
            Harness.iterate("h2", Harness.iterations(args, 10), it -> {
                Harness.parallel(pool, threads, w -> client(url, new Random(it * 1000L + w), transactions));
                try (Statement s = setup.createStatement();
                     ResultSet r = s.executeQuery("select b.id, sum(a.balance), count(*) from account a join branch b on a.branch = b.id group by b.id order by b.id")) {
                    while (r.next()) r.getLong(2);
                }
            });
            pool.shutdown();
        }
    }

    static void client(String url, Random random, int transactions) throws Exception {
        try (Connection c = DriverManager.getConnection(url, "sa", "")) {
            c.setAutoCommit(false);
            PreparedStatement acc = c.prepareStatement("update account set balance = balance + ? where id = ?");
            PreparedStatement tel = c.prepareStatement("update teller set balance = balance + ? where id = ?");
            PreparedStatement bra = c.prepareStatement("update branch set balance = balance + ? where id = ?");
            PreparedStatement his = c.prepareStatement("insert into history(account, teller, branch, delta, at) values (?, ?, ?, ?, current_timestamp)");
            PreparedStatement get = c.prepareStatement("select balance from account where id = ?");
            for (int t = 0; t < transactions; t++) {
                int account = random.nextInt(ACCOUNTS), teller = random.nextInt(TELLERS);
                int branch = teller % BRANCHES;
                long delta = random.nextInt(2000) - 1000;
                acc.setLong(1, delta); acc.setInt(2, account); acc.executeUpdate();
                tel.setLong(1, delta); tel.setInt(2, teller); tel.executeUpdate();
                bra.setLong(1, delta); bra.setInt(2, branch); bra.executeUpdate();
                his.setInt(1, account); his.setInt(2, teller); his.setInt(3, branch); his.setLong(4, delta); his.executeUpdate();
                get.setInt(1, account);
                try (ResultSet r = get.executeQuery()) { r.next(); }
                c.commit();
            }
        }
    }
}
