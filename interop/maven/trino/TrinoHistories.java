import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.trino.Session;
import io.trino.plugin.iceberg.IcebergPlugin;
import io.trino.spi.type.SqlDate;
import io.trino.spi.type.SqlDecimal;
import io.trino.spi.type.SqlTime;
import io.trino.spi.type.SqlTimestamp;
import io.trino.spi.type.SqlTimestampWithTimeZone;
import io.trino.spi.type.SqlVarbinary;
import io.trino.testing.MaterializedResult;
import io.trino.testing.MaterializedRow;
import io.trino.testing.QueryRunner;
import io.trino.testing.StandaloneQueryRunner;

import java.io.BufferedWriter;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.PrintStream;
import java.math.BigDecimal;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.Statement;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.LocalTime;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.UUID;

import static io.trino.testing.TestingSession.testSessionBuilder;

/**
 * Random histories written by an embedded Trino (icecdc's interop stage,
 * part trino): each history is one v3 table in a JDBC catalog on SQLite,
 * changed by a random sequence of Trino statements — inserts of several
 * files, deletes by key, range, partition and of everything, updates that
 * change values, move rows between partitions or change the key, MERGE,
 * optimize, optimize_manifests, ADD COLUMN with a DEFAULT of several
 * types, rename, drop, widen, repartitioning. The oracle is Trino's own
 * time-travel read of every snapshot with "$row_id" and
 * "$last_updated_sequence_number".
 *
 * <p>Arguments: out-dir catalog-db warehouse-dir histories steps seed.
 * Writes out-dir/hN.jsonl: a line per statement ({"sql", "error"}) and a
 * line per snapshot ({"snapshot_id", "columns", "rows"}), values in the
 * JSON form icecdc's debezium-json gives them.
 */
public final class TrinoHistories {
    private static final ObjectMapper JSON = new ObjectMapper();
    // Trino's logging takes System.out over: the progress lines go to the
    // process's own standard output.
    private static final PrintStream CONSOLE = new PrintStream(new FileOutputStream(FileDescriptor.out), true);
    private static final DateTimeFormatter TS = DateTimeFormatter.ofPattern("yyyy-MM-dd'T'HH:mm:ss.SSSSSS");
    private static final DateTimeFormatter TS_NS = DateTimeFormatter.ofPattern("yyyy-MM-dd'T'HH:mm:ss.SSSSSSSSS");
    private static final DateTimeFormatter TIME = DateTimeFormatter.ofPattern("HH:mm:ss.SSSSSS");

    /** A column of a history's table: name, SQL type, value expression of x. */
    record Col(String name, String type, String expr) {}

    /** Types a column may be added with: type, value of x, DEFAULT literal. */
    private static final String[][] ADDED = {
        {"BIGINT", "x * 7", "7"},
        {"INTEGER", "CAST(x % 1000 AS INTEGER)", "42"},
        {"VARCHAR", "'v' || CAST(x AS VARCHAR)", "'dflt'"},
        {"DOUBLE", "x / 8e0", "1.5e0"},
        {"REAL", "CAST(x / 4e0 AS REAL)", "REAL '2.5'"},
        {"DECIMAL(10,3)", "CAST(x AS DECIMAL(10,3)) / 8", "1.500"},
        {"BOOLEAN", "x % 2 = 0", "true"},
        {"DATE", "DATE '2020-01-01' + x * INTERVAL '1' DAY", "DATE '2001-02-03'"},
        {"TIME(6)", "TIME '01:02:03.000001' + x * INTERVAL '1' SECOND", "TIME '04:05:06.789012'"},
        {"TIMESTAMP(6)", "TIMESTAMP '2020-01-01 00:00:00.000001' + x * INTERVAL '1' MINUTE", "TIMESTAMP '2001-02-03 04:05:06.789012'"},
        {"TIMESTAMP(6) WITH TIME ZONE", "TIMESTAMP '2020-01-01 00:00:00.000001 UTC' + x * INTERVAL '1' HOUR",
            "TIMESTAMP '2001-02-03 04:05:06.789012 UTC'"},
        {"TIMESTAMP(9)", "TIMESTAMP '2020-01-01 00:00:00.000000001' + x * INTERVAL '1' MINUTE",
            "TIMESTAMP '2001-02-03 04:05:06.789012345'"},
        {"TIMESTAMP(9) WITH TIME ZONE", "TIMESTAMP '2020-01-01 00:00:00.000000001 UTC' + x * INTERVAL '1' HOUR",
            "TIMESTAMP '2001-02-03 04:05:06.789012345 UTC'"},
        {"VARBINARY", "to_utf8(CAST(x AS VARCHAR))", "X'0102ff'"},
        {"UUID", "CAST('00000000-0000-4000-8000-' || lpad(CAST(x AS VARCHAR), 12, '0') AS UUID)",
            "UUID '12151fd2-7586-11e9-8f9e-2a86e4085a59'"},
    };

    private final QueryRunner trino;
    private final Random rnd;
    private final String table;
    private final BufferedWriter out;
    private final List<Col> cols = new ArrayList<>();
    private long nextId = 1;
    private int added;
    int ok, failed;

    TrinoHistories(QueryRunner trino, Random rnd, String table, BufferedWriter out) {
        this.trino = trino;
        this.rnd = rnd;
        this.table = table;
        this.out = out;
    }

    public static void main(String[] args) throws Exception {
        Path outDir = Path.of(args[0]);
        Path db = Path.of(args[1]);
        Path warehouse = Path.of(args[2]);
        int histories = Integer.parseInt(args[3]);
        int steps = Integer.parseInt(args[4]);
        long seed = Long.parseLong(args[5]);
        Files.createDirectories(outDir);
        Files.createDirectories(warehouse);
        // Trino's JDBC catalog does not create Iceberg's catalog tables.
        try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + db); Statement s = c.createStatement()) {
            s.execute("CREATE TABLE IF NOT EXISTS iceberg_tables (catalog_name VARCHAR(255) NOT NULL, "
                    + "table_namespace VARCHAR(255) NOT NULL, table_name VARCHAR(255) NOT NULL, "
                    + "metadata_location VARCHAR(1000), previous_metadata_location VARCHAR(1000), "
                    + "iceberg_type VARCHAR(5), PRIMARY KEY (catalog_name, table_namespace, table_name))");
            s.execute("CREATE TABLE IF NOT EXISTS iceberg_namespace_properties (catalog_name VARCHAR(255) NOT NULL, "
                    + "namespace VARCHAR(255) NOT NULL, property_key VARCHAR(255), property_value VARCHAR(1000), "
                    + "PRIMARY KEY (catalog_name, namespace, property_key))");
        }
        Session session = testSessionBuilder().setCatalog("iceberg").setSchema("h").build();
        long t0 = System.nanoTime();
        try (QueryRunner trino = new StandaloneQueryRunner(session)) {
            trino.installPlugin(new IcebergPlugin());
            Map<String, String> props = new LinkedHashMap<>();
            props.put("iceberg.catalog.type", "jdbc");
            props.put("iceberg.jdbc-catalog.driver-class", "org.sqlite.JDBC");
            props.put("iceberg.jdbc-catalog.connection-url", "jdbc:sqlite:" + db);
            props.put("iceberg.jdbc-catalog.catalog-name", "trino");
            props.put("iceberg.jdbc-catalog.default-warehouse-dir", warehouse.toUri().toString());
            props.put("iceberg.format-version", "3");
            props.put("fs.native-local.enabled", "true");
            props.put("local.location", "/");
            // Small Parquet row groups and files: an insert of a few
            // thousand rows writes several row groups, and several files.
            props.put("parquet.writer.block-size", "64kB");
            props.put("iceberg.target-max-file-size", "256kB");
            trino.createCatalog("iceberg", "iceberg", props);
            trino.execute("CREATE SCHEMA IF NOT EXISTS iceberg.h");
            CONSOLE.printf("trino: started in %.1fs%n", (System.nanoTime() - t0) / 1e9);
            int okAll = 0, failedAll = 0;
            for (int i = 1; i <= histories; i++) {
                long h0 = System.nanoTime();
                String name = "h" + i;
                try (BufferedWriter w = Files.newBufferedWriter(outDir.resolve(name + ".jsonl"))) {
                    TrinoHistories h = new TrinoHistories(trino, new Random(seed * 1000 + i), name, w);
                    h.run(steps);
                    h.dump();
                    okAll += h.ok;
                    failedAll += h.failed;
                    CONSOLE.printf("trino: history %s: %d statements, %d refused, %.1fs%n", name, h.ok, h.failed,
                            (System.nanoTime() - h0) / 1e9);
                }
            }
            CONSOLE.printf("trino: %d histories, %d statements, %d refused, %.1fs%n", histories, okAll, failedAll,
                    (System.nanoTime() - t0) / 1e9);
        }
        System.exit(0); // Trino's non-daemon threads
    }

    void run(int steps) throws Exception {
        cols.add(new Col("id", "BIGINT", "x"));
        cols.add(new Col("part", "INTEGER", "CAST(x % 4 AS INTEGER)"));
        cols.add(new Col("name", "VARCHAR", "'n' || CAST(x AS VARCHAR)"));
        cols.add(new Col("amount", "DECIMAL(12,2)", "CAST(x AS DECIMAL(12,2)) / 4"));
        cols.add(new Col("score", "REAL", "CAST(x / 3e0 AS REAL)"));
        cols.add(new Col("small", "INTEGER", "CAST(x % 100 AS INTEGER)"));
        cols.add(new Col("day", "DATE", "DATE '2024-01-01' + (x % 300) * INTERVAL '1' DAY"));
        String[] parts = {"ARRAY['part']", "ARRAY[]", "ARRAY['bucket(id, 3)']", "ARRAY['part', 'bucket(id, 2)']"};
        StringBuilder ddl = new StringBuilder("CREATE TABLE " + table + " (");
        for (int i = 0; i < cols.size(); i++) {
            ddl.append(i > 0 ? ", " : "").append(cols.get(i).name()).append(' ').append(cols.get(i).type());
        }
        ddl.append(") WITH (format_version = 3, partitioning = ").append(parts[rnd.nextInt(parts.length)]).append(')');
        exec(ddl.toString());
        insert(1 + rnd.nextInt(300));
        for (int s = 0; s < steps; s++) {
            step();
        }
        // every history ends with a default of every added type read by old rows
        exec("UPDATE " + table + " SET name = name || 'z' WHERE id % 5 = 0");
    }

    private long someId() {
        return 1 + (long) rnd.nextInt((int) Math.max(1, nextId - 1));
    }

    private void step() throws Exception {
        int k = rnd.nextInt(100);
        long a = someId();
        long b = a + rnd.nextInt(60);
        if (k < 20) {
            insert(1 + rnd.nextInt(k < 5 ? 2000 : 200));
        } else if (k < 27) {
            exec("DELETE FROM " + table + " WHERE id = " + a);
        } else if (k < 34) {
            exec("DELETE FROM " + table + " WHERE id BETWEEN " + a + " AND " + b);
        } else if (k < 37) {
            exec("DELETE FROM " + table + " WHERE part = " + rnd.nextInt(4));
        } else if (k < 38) {
            exec("DELETE FROM " + table);
        } else if (k < 46) {
            Col c = valueColumn();
            exec("UPDATE " + table + " SET " + c.name() + " = " + c.expr().replace("x", "(id + " + rnd.nextInt(1000) + ")")
                    + " WHERE id % " + (2 + rnd.nextInt(7)) + " = 1");
        } else if (k < 51) {
            exec("UPDATE " + table + " SET part = CAST((part + 1) % 4 AS INTEGER) WHERE id BETWEEN " + a + " AND " + b);
        } else if (k < 55) {
            long off = nextId + 100000;
            exec("UPDATE " + table + " SET id = id + " + off + " WHERE id BETWEEN " + a + " AND " + b);
            nextId = off + b + 1;
        } else if (k < 62) {
            merge(a, b);
        } else if (k < 66) {
            exec("ALTER TABLE " + table + " EXECUTE optimize");
        } else if (k < 69) {
            exec("ALTER TABLE " + table + " EXECUTE optimize_manifests");
        } else if (k < 79) {
            addColumn();
        } else if (k < 83) {
            Col c = droppable();
            if (c != null) {
                String to = c.name() + "_r";
                if (exec("ALTER TABLE " + table + " RENAME COLUMN " + c.name() + " TO " + to)) {
                    cols.set(cols.indexOf(c), new Col(to, c.type(), c.expr()));
                }
            }
        } else if (k < 87) {
            Col c = droppable();
            if (c != null && exec("ALTER TABLE " + table + " DROP COLUMN " + c.name())) {
                cols.remove(c);
            }
        } else if (k < 92) {
            widen();
        } else if (k < 95) {
            String[] parts = {"ARRAY['part']", "ARRAY[]", "ARRAY['bucket(id, 4)']", "ARRAY['truncate(name, 2)']"};
            exec("ALTER TABLE " + table + " SET PROPERTIES partitioning = " + parts[rnd.nextInt(parts.length)]);
        } else {
            // a second delete on the same rows' files
            exec("DELETE FROM " + table + " WHERE id % 7 = " + rnd.nextInt(7) + " AND id BETWEEN " + a + " AND " + (a + 500));
        }
    }

    private Col valueColumn() {
        List<Col> vs = cols.stream().filter(c -> !c.name().equals("id") && !c.name().equals("part")).toList();
        return vs.get(rnd.nextInt(vs.size()));
    }

    private Col droppable() {
        List<Col> vs = cols.stream().filter(c -> !c.name().equals("id") && !c.name().equals("part")
                && !c.name().equals("name")).toList();
        return vs.isEmpty() ? null : vs.get(rnd.nextInt(vs.size()));
    }

    private String columnList() {
        return String.join(", ", cols.stream().map(Col::name).toList());
    }

    private String values(String x) {
        return String.join(", ", cols.stream().map(c -> c.expr().replace("x", x)).toList());
    }

    private void insert(int n) throws Exception {
        long from = nextId;
        nextId += n;
        exec("INSERT INTO " + table + " (" + columnList() + ") SELECT " + values("s.x")
                + " FROM UNNEST(sequence(" + from + ", " + (nextId - 1) + ")) AS s(x)");
    }

    private void merge(long a, long b) throws Exception {
        long hi = b + 20;
        List<String> inserts = new ArrayList<>();
        for (Col c : cols) {
            inserts.add(c.expr().replace("x", "s.x"));
        }
        Col v = valueColumn();
        exec("MERGE INTO " + table + " t USING (SELECT x FROM UNNEST(sequence(" + a + ", " + hi + ")) AS u(x)) s"
                + " ON t.id = s.x"
                + " WHEN MATCHED AND s.x % 3 = 0 THEN DELETE"
                + " WHEN MATCHED THEN UPDATE SET " + v.name() + " = " + v.expr().replace("x", "(s.x + 7)")
                + " WHEN NOT MATCHED AND s.x % 2 = 0 THEN INSERT (" + columnList() + ") VALUES (" + String.join(", ", inserts) + ")");
        nextId = Math.max(nextId, hi + 1);
    }

    private void addColumn() throws Exception {
        String[] t = ADDED[rnd.nextInt(ADDED.length)];
        String name = "c" + (++added);
        boolean withDefault = rnd.nextInt(4) != 0;
        // Trino 483 refuses a DEFAULT of timestamp(9) (with or without zone):
        // the column is then added without one.
        if (exec("ALTER TABLE " + table + " ADD COLUMN " + name + " " + t[0] + (withDefault ? " DEFAULT " + t[2] : ""))
                || withDefault && exec("ALTER TABLE " + table + " ADD COLUMN " + name + " " + t[0])) {
            cols.add(new Col(name, t[0], t[1]));
        }
    }

    private void widen() throws Exception {
        for (Col c : cols) {
            String to = switch (c.type()) {
                case "INTEGER" -> "BIGINT";
                case "REAL" -> "DOUBLE";
                case "DECIMAL(12,2)" -> "DECIMAL(16,2)";
                default -> null;
            };
            if (to != null && !c.name().equals("part") && rnd.nextBoolean()) {
                if (exec("ALTER TABLE " + table + " ALTER COLUMN " + c.name() + " SET DATA TYPE " + to)) {
                    cols.set(cols.indexOf(c), new Col(c.name(), to, c.expr()));
                }
                return;
            }
        }
    }

    /** Runs one statement; a refusal is recorded, not fatal. */
    private boolean exec(String sql) throws Exception {
        ObjectNode line = JsonNodeFactory.instance.objectNode();
        line.put("sql", sql);
        boolean good = true;
        try {
            trino.execute(sql);
            ok++;
        } catch (RuntimeException e) {
            line.put("error", String.valueOf(e.getMessage()).lines().findFirst().orElse(""));
            failed++;
            good = false;
        }
        out.write(JSON.writeValueAsString(line));
        out.newLine();
        return good;
    }

    /** Trino's read of every snapshot: the oracle. */
    void dump() throws Exception {
        MaterializedResult snaps = trino.execute("SELECT snapshot_id FROM \"" + table + "$snapshots\" ORDER BY committed_at");
        for (MaterializedRow s : snaps.getMaterializedRows()) {
            long sid = (Long) s.getField(0);
            MaterializedResult r = trino.execute("SELECT *, \"$row_id\", \"$last_updated_sequence_number\" FROM " + table
                    + " FOR VERSION AS OF " + sid);
            ObjectNode line = JsonNodeFactory.instance.objectNode();
            line.put("snapshot_id", sid);
            ArrayNode names = line.putArray("columns");
            r.getColumnNames().forEach(names::add);
            ArrayNode rows = line.putArray("rows");
            for (MaterializedRow row : r.getMaterializedRows()) {
                ArrayNode vals = rows.addArray();
                for (int i = 0; i < row.getFieldCount(); i++) {
                    vals.addPOJO(value(row.getField(i)));
                }
            }
            out.write(JSON.writeValueAsString(line));
            out.newLine();
        }
    }

    /** A value in debezium-json's form (docs/events.md). */
    static Object value(Object v) {
        if (v == null || v instanceof Boolean || v instanceof Long || v instanceof Integer || v instanceof Short
                || v instanceof Byte || v instanceof Double || v instanceof Float || v instanceof String) {
            return v;
        }
        if (v instanceof SqlDecimal || v instanceof SqlDate) {
            return v.toString(); // "-12.30", "2001-02-03"
        }
        if (v instanceof SqlTime t) {
            return value(LocalTime.parse(t.toString()));
        }
        if (v instanceof SqlTimestamp t) {
            return t.toLocalDateTime().format(t.getPrecision() > 6 ? TS_NS : TS);
        }
        if (v instanceof SqlTimestampWithTimeZone t) {
            return t.toZonedDateTime().withZoneSameInstant(ZoneOffset.UTC).toLocalDateTime()
                    .format(t.getPrecision() > 6 ? TS_NS : TS) + "Z";
        }
        if (v instanceof SqlVarbinary b) {
            return value(b.getBytes());
        }
        if (v instanceof BigDecimal d) {
            return d.toPlainString();
        }
        if (v instanceof LocalDate d) {
            return d.toString();
        }
        if (v instanceof LocalTime t) {
            return t.format(TIME);
        }
        if (v instanceof LocalDateTime t) {
            return t.format(TS);
        }
        if (v instanceof ZonedDateTime t) {
            return t.withZoneSameInstant(ZoneOffset.UTC).toLocalDateTime().format(TS) + "Z";
        }
        if (v instanceof byte[] b) {
            return Base64.getEncoder().encodeToString(b);
        }
        if (v instanceof UUID u) {
            return u.toString();
        }
        if (v instanceof List<?> l) {
            return l.stream().map(TrinoHistories::value).toList();
        }
        return v.getClass().getSimpleName() + ":" + v;
    }
}
