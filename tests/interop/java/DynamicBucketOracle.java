// Test helper run against Apache Paimon 0.9 (the oracle's bridge jar): writes and reads
// dynamic-bucket primary-key tables (bucket = -1) the way Paimon's Flink sink does
// (DynamicBucketSink: HashBucketAssigner loading the table's hash index, then
// TableWrite.write(row, bucket), whose HashIndexMaintainer writes the HASH index files).
// Table shape: pt STRING, id INT, v STRING, primary key (pt, id), partitioned by pt.
// Protocol: one command per stdin line, fields separated by TAB; every command answers one line
// "OK ..." or "ERR <exception class>: <message>".
//   CREATE <wh> <db.table> <options JSON-less: k=v,k=v>      -> OK
//   WRITE <wh> <db.table> <user> <commitId> <channels> <rows>  -> OK <buckets>
//       rows: kind:pt:id:v separated by ';' (kind +I/-D/-U/+U; v may be empty); the table is
//       written by <channels> assigners (channel of a row: BucketAssigner.computeAssigner, as
//       Flink's assigner shuffle; numAssigners = min(initial-buckets, channels)); answers the
//       bucket of every row, comma separated.
//   READ <wh> <db.table>  -> OK rows=<n>, then n lines "R pt\tid\tv\tbucket" (a full read: rows
//       merged per bucket, with the bucket of the split they came from).
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.paimon.catalog.Catalog;
import org.apache.paimon.catalog.CatalogContext;
import org.apache.paimon.catalog.CatalogFactory;
import org.apache.paimon.catalog.Identifier;
import org.apache.paimon.data.BinaryRow;
import org.apache.paimon.data.BinaryString;
import org.apache.paimon.data.GenericRow;
import org.apache.paimon.data.InternalRow;
import org.apache.paimon.index.BucketAssigner;
import org.apache.paimon.index.HashBucketAssigner;
import org.apache.paimon.options.Options;
import org.apache.paimon.reader.RecordReader;
import org.apache.paimon.schema.Schema;
import org.apache.paimon.table.FileStoreTable;
import org.apache.paimon.table.sink.CommitMessage;
import org.apache.paimon.table.sink.RowKeyExtractor;
import org.apache.paimon.table.sink.StreamTableCommit;
import org.apache.paimon.table.sink.StreamTableWrite;
import org.apache.paimon.table.sink.StreamWriteBuilder;
import org.apache.paimon.table.source.DataSplit;
import org.apache.paimon.table.source.ReadBuilder;
import org.apache.paimon.table.source.Split;
import org.apache.paimon.types.DataTypes;
import org.apache.paimon.types.RowKind;

public class DynamicBucketOracle {
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
                .column("pt", DataTypes.STRING().notNull())
                .column("id", DataTypes.INT().notNull())
                .column("v", DataTypes.STRING())
                .partitionKeys("pt")
                .primaryKey("pt", "id")
                .option("bucket", "-1");
        if (f.length > 3 && !f[3].isEmpty()) {
            for (String kv : f[3].split(",")) {
                String[] p = kv.split("=", 2);
                b.option(p[0], p[1]);
            }
        }
        c.createTable(id, b.build(), false);
        return "OK";
    }

    static String write(String[] f) throws Exception {
        FileStoreTable t = table(f[1], f[2]);
        String user = f[3];
        long commitId = Long.parseLong(f[4]);
        int channels = Integer.parseInt(f[5]);
        Integer initial = t.coreOptions().dynamicBucketInitialBuckets();
        int assigners = initial == null ? channels : Math.min(initial, channels);
        long target = t.coreOptions().dynamicBucketTargetRowNum();
        HashBucketAssigner[] byChannel = new HashBucketAssigner[channels];
        for (int i = 0; i < channels; i++) {
            byChannel[i] = new HashBucketAssigner(t.snapshotManager(), user,
                    t.store().newIndexFileHandler(), channels, assigners, i, target);
        }
        RowKeyExtractor extractor = t.createRowKeyExtractor();
        StreamWriteBuilder wb = t.newStreamWriteBuilder().withCommitUser(user);
        StringBuilder buckets = new StringBuilder();
        try (StreamTableWrite w = wb.newWrite(); StreamTableCommit c = wb.newCommit()) {
            for (String r : f[6].split(";")) {
                String[] p = r.split(":", -1);
                GenericRow row = GenericRow.ofKind(RowKind.fromShortString(p[0]),
                        BinaryString.fromString(p[1]), Integer.parseInt(p[2]),
                        p[3].isEmpty() ? null : BinaryString.fromString(p[3]));
                extractor.setRecord(row);
                BinaryRow partition = extractor.partition();
                int hash = extractor.trimmedPrimaryKey().hashCode();
                int channel = BucketAssigner.computeAssigner(
                        partition.hashCode(), hash, channels, assigners);
                int bucket = byChannel[channel].assign(partition, hash);
                w.write(row, bucket);
                if (buckets.length() > 0) {
                    buckets.append(',');
                }
                buckets.append(bucket);
            }
            List<CommitMessage> msgs = w.prepareCommit(false, commitId);
            c.commit(commitId, msgs);
        }
        return "OK " + buckets;
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
