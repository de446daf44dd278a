// Test helper run against Apache Paimon 0.9 (the oracle's bridge jar, plus a rocksdbjni jar):
// writes and reads cross-partition upsert tables (bucket = -1, primary key without the partition
// key) the way Paimon's Flink sink does (GlobalDynamicBucketSink: IndexBootstrap loading the
// table's keys, GlobalIndexAssigner assigning (partition, bucket) and emitting the -D of a key
// that moved, then TableWrite.write(row, bucket)).
// Table shape: pt STRING, id INT NOT NULL, v STRING, primary key (id), partitioned by pt.
// Protocol: one command per stdin line, fields separated by TAB; every command answers one line
// "OK ..." or "ERR <exception class>: <message>".
//   CREATE <wh> <db.table> <options k=v,k=v>                -> OK
//   WRITE <wh> <db.table> <user> <commitId> <rows>           -> OK <records>
//       rows: kind:pt:id:v separated by ';' (kind +I/-D/-U/+U; v may be empty); answers the
//       records the assigner emitted, kind:pt:id:bucket separated by ';'.
//   OVERWRITE <wh> <db.table> <rows>  -> OK <records>: the same through an INSERT OVERWRITE
//       (BatchWriteBuilder.withOverwrite(): the table's dynamic-partition-overwrite decides
//       which partitions are replaced; the index is bootstrapped from the latest snapshot).
//   READ <wh> <db.table>  -> OK rows=<n>, then n lines "R pt\tid\tv\tbucket".
import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;

import org.apache.paimon.catalog.Catalog;
import org.apache.paimon.catalog.CatalogContext;
import org.apache.paimon.catalog.CatalogFactory;
import org.apache.paimon.catalog.Identifier;
import org.apache.paimon.crosspartition.GlobalIndexAssigner;
import org.apache.paimon.crosspartition.IndexBootstrap;
import org.apache.paimon.data.BinaryString;
import org.apache.paimon.data.GenericRow;
import org.apache.paimon.data.InternalRow;
import org.apache.paimon.disk.IOManager;
import org.apache.paimon.options.Options;
import org.apache.paimon.reader.RecordReader;
import org.apache.paimon.schema.Schema;
import org.apache.paimon.table.FileStoreTable;
import org.apache.paimon.table.sink.BatchTableCommit;
import org.apache.paimon.table.sink.BatchTableWrite;
import org.apache.paimon.table.sink.BatchWriteBuilder;
import org.apache.paimon.table.sink.StreamTableCommit;
import org.apache.paimon.table.sink.StreamTableWrite;
import org.apache.paimon.table.sink.StreamWriteBuilder;
import org.apache.paimon.table.sink.TableWrite;
import org.apache.paimon.table.source.DataSplit;
import org.apache.paimon.table.source.ReadBuilder;
import org.apache.paimon.table.source.Split;
import org.apache.paimon.types.DataTypes;
import org.apache.paimon.types.RowKind;

public class CrossPartitionOracle {
    static Catalog catalog(String wh) {
        Options o = new Options();
        o.set("warehouse", wh);
        o.set("cache-enabled", "false");
        return CatalogFactory.createCatalog(CatalogContext.create(o));
    }

    static FileStoreTable table(String wh, String name) throws Exception {
        return (FileStoreTable) catalog(wh).getTable(Identifier.fromString(name));
    }

    static String create(String[] f) throws Exception {
        Catalog c = catalog(f[1]);
        Identifier id = Identifier.fromString(f[2]);
        c.createDatabase(id.getDatabaseName(), true);
        Schema.Builder b = Schema.newBuilder()
                .column("pt", DataTypes.STRING())
                .column("id", DataTypes.INT().notNull())
                .column("v", DataTypes.STRING())
                .partitionKeys("pt")
                .primaryKey("id")
                .option("bucket", "-1");
        if (f.length > 3 && !f[3].isEmpty()) {
            for (String kv : f[3].split(",")) {
                String[] p = kv.split("=", 2);
                b.option(p[0], p[1]);
            }
        }
        c.createTable(id, b.build(), false);
        return "OK " + table(f[1], f[2]).bucketMode();
    }

    static String write(String[] f) throws Exception {
        FileStoreTable t = table(f[1], f[2]);
        long commitId = Long.parseLong(f[4]);
        File tmp = Files.createTempDirectory("xpart-io").toFile();
        StreamWriteBuilder wb = t.newStreamWriteBuilder().withCommitUser(f[3]);
        try (IOManager io = IOManager.create(tmp.getPath());
                StreamTableWrite w = wb.newWrite();
                StreamTableCommit c = wb.newCommit()) {
            String emitted = assign(t, io, w, f[5]);
            c.commit(commitId, w.prepareCommit(false, commitId));
            return "OK " + emitted;
        }
    }

    static String overwrite(String[] f) throws Exception {
        FileStoreTable t = table(f[1], f[2]);
        File tmp = Files.createTempDirectory("xpart-io").toFile();
        BatchWriteBuilder wb = t.newBatchWriteBuilder().withOverwrite();
        try (IOManager io = IOManager.create(tmp.getPath());
                BatchTableWrite w = wb.newWrite();
                BatchTableCommit c = wb.newCommit()) {
            String emitted = assign(t, io, w, f[3]);
            c.commit(w.prepareCommit());
            return "OK " + emitted;
        }
    }

    /** Bootstraps Java's assigner from the table, sends {@code rows} through it into
     * {@code w}; answers the records emitted. */
    static String assign(FileStoreTable t, IOManager io, TableWrite w, String rows)
            throws Exception {
        StringBuilder emitted = new StringBuilder();
        w.withIOManager(io);
        GlobalIndexAssigner a = new GlobalIndexAssigner(t);
        a.open(0L, io, 1, 0, (row, bucket) -> {
            try {
                w.write(row, bucket);
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
            if (emitted.length() > 0) {
                emitted.append(';');
            }
            emitted.append(row.getRowKind().shortString()).append(':')
                    .append(row.isNullAt(0) ? "" : row.getString(0).toString()).append(':')
                    .append(row.getInt(1)).append(':').append(bucket);
        });
        new IndexBootstrap(t).bootstrap(1, 0, row -> {
            try {
                a.bootstrapKey(row);
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
        });
        a.endBoostrap(false);
        for (String r : rows.split(";")) {
            String[] p = r.split(":", -1);
            a.processInput(GenericRow.ofKind(RowKind.fromShortString(p[0]),
                    BinaryString.fromString(p[1]), Integer.parseInt(p[2]),
                    p[3].isEmpty() ? null : BinaryString.fromString(p[3])));
        }
        a.close();
        return emitted.toString();
    }

    static List<String> read(String[] f) throws Exception {
        FileStoreTable t = table(f[1], f[2]);
        ReadBuilder rb = t.newReadBuilder();
        List<String> out = new ArrayList<>();
        for (Split s : rb.newScan().plan().splits()) {
            int bucket = ((DataSplit) s).bucket();
            try (RecordReader<InternalRow> r = rb.newRead().createReader(s)) {
                r.forEachRemaining(row -> out.add("R " + row.getString(0) + "\t" + row.getInt(1)
                        + "\t" + (row.isNullAt(2) ? "" : row.getString(2).toString())
                        + "\t" + bucket));
            }
        }
        return out;
    }

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(
                new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isEmpty()) {
                continue;
            }
            String[] f = line.split("\t", -1);
            try {
                switch (f[0]) {
                    case "CREATE":
                        System.out.println(create(f));
                        break;
                    case "WRITE":
                        System.out.println(write(f));
                        break;
                    case "OVERWRITE":
                        System.out.println(overwrite(f));
                        break;
                    case "READ":
                        List<String> rows = read(f);
                        System.out.println("OK rows=" + rows.size());
                        for (String r : rows) {
                            System.out.println(r);
                        }
                        break;
                    default:
                        System.out.println("ERR unknown command " + f[0]);
                }
            } catch (Throwable e) {
                System.out.println("ERR " + e.getClass().getName() + ": "
                        + String.valueOf(e.getMessage()).replace('\n', ' '));
            }
            System.out.flush();
        }
    }
}
