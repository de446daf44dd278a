// Test helper run against Apache Paimon 0.9 (the oracle's bridge jar): reads a system table
// (db.t$snapshots, db.t$files, ...) through Paimon's own catalog (SystemTableLoader) and prints it
// as canonical JSON lines. It can also tag a snapshot and record a consumer, to set tables up.
// Protocol: one command per stdin line, fields separated by TAB; every command answers one line
// "OK ..." or "ERR <exception class>: <message>".
//   SYS <wh> <db.table$name> [key=value]...  -> OK <n>, then "S <schema JSON>" and n "R <JSON>"
//       lines (rows in read order). Dynamic options (e.g. scan.snapshot-id=3) are applied with
//       Table.copy. Schema JSON: [[name, type string], ...].
//   CONSUMER <wh> <db.table> <id> <nextSnapshot>  -> OK (ConsumerManager.resetConsumer)
//   TAG <wh> <db.table> <name> <snapshotId> [retainedMillis]  -> OK (Table.createTag)
// Values: null, JSON numbers / booleans, strings for STRING, timestamps as epoch MICROseconds,
// arrays as JSON arrays; BYTES as lowercase hex.
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
import org.apache.paimon.consumer.Consumer;
import org.apache.paimon.consumer.ConsumerManager;
import org.apache.paimon.data.InternalArray;
import org.apache.paimon.data.InternalRow;
import org.apache.paimon.data.Timestamp;
import org.apache.paimon.options.Options;
import org.apache.paimon.reader.RecordReader;
import org.apache.paimon.table.FileStoreTable;
import org.apache.paimon.table.Table;
import org.apache.paimon.table.source.ReadBuilder;
import org.apache.paimon.types.ArrayType;
import org.apache.paimon.types.DataField;
import org.apache.paimon.types.DataType;

public class SystemTableOracle {
    static Catalog catalog(String wh) {
        Options o = new Options();
        o.set("warehouse", wh);
        o.set("cache-enabled", "false");
        return CatalogFactory.createCatalog(CatalogContext.create(o));
    }

    static String quote(String s) {
        StringBuilder sb = new StringBuilder("\"");
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"': sb.append("\\\""); break;
                case '\\': sb.append("\\\\"); break;
                case '\n': sb.append("\\n"); break;
                case '\r': sb.append("\\r"); break;
                case '\t': sb.append("\\t"); break;
                default:
                    if (c < 0x20) {
                        sb.append(String.format("\\u%04x", (int) c));
                    } else {
                        sb.append(c);
                    }
            }
        }
        return sb.append('"').toString();
    }

    static String value(Object v, DataType type) {
        if (v == null) {
            return "null";
        }
        if (v instanceof Timestamp) {
            Timestamp t = (Timestamp) v;
            return String.valueOf(t.getMillisecond() * 1000L + t.getNanoOfMillisecond() / 1000);
        }
        if (v instanceof InternalArray) {
            InternalArray a = (InternalArray) v;
            DataType et = ((ArrayType) type).getElementType();
            InternalArray.ElementGetter g = InternalArray.createElementGetter(et);
            StringBuilder sb = new StringBuilder("[");
            for (int i = 0; i < a.size(); i++) {
                sb.append(i == 0 ? "" : ",").append(value(g.getElementOrNull(a, i), et));
            }
            return sb.append(']').toString();
        }
        if (v instanceof byte[]) {
            StringBuilder sb = new StringBuilder("\"");
            for (byte b : (byte[]) v) {
                sb.append(String.format("%02x", b));
            }
            return sb.append('"').toString();
        }
        if (v instanceof Number || v instanceof Boolean) {
            return String.valueOf(v);
        }
        return quote(v.toString());
    }

    static String run(String[] f, StringBuilder rows) throws Exception {
        Catalog cat = catalog(f[1]);
        Identifier id = Identifier.fromString(f[2]);
        switch (f[0]) {
            case "SYS": {
                Map<String, String> dyn = new HashMap<>();
                for (int i = 3; i < f.length; i++) {
                    int eq = f[i].indexOf('=');
                    dyn.put(f[i].substring(0, eq), f[i].substring(eq + 1));
                }
                Table t = cat.getTable(id);
                if (!dyn.isEmpty()) {
                    t = t.copy(dyn);
                }
                List<DataField> fields = t.rowType().getFields();
                StringBuilder schema = new StringBuilder("S [");
                InternalRow.FieldGetter[] getters = new InternalRow.FieldGetter[fields.size()];
                for (int i = 0; i < getters.length; i++) {
                    DataField fd = fields.get(i);
                    getters[i] = InternalRow.createFieldGetter(fd.type(), i);
                    schema.append(i == 0 ? "" : ",").append('[').append(quote(fd.name()))
                            .append(',').append(quote(fd.type().toString())).append(']');
                }
                rows.append(schema).append("]\n");
                ReadBuilder rb = t.newReadBuilder();
                List<String> lines = new ArrayList<>();
                try (RecordReader<InternalRow> reader =
                        rb.newRead().createReader(rb.newScan().plan())) {
                    reader.forEachRemaining(row -> {
                        StringBuilder sb = new StringBuilder("R [");
                        sb.append(quote(row.getRowKind().shortString()));
                        for (int i = 0; i < getters.length; i++) {
                            sb.append(',').append(
                                    value(getters[i].getFieldOrNull(row), fields.get(i).type()));
                        }
                        lines.add(sb.append(']').toString());
                    });
                }
                for (String l : lines) {
                    rows.append(l).append("\n");
                }
                return String.valueOf(lines.size());
            }
            case "CONSUMER": {
                FileStoreTable t = (FileStoreTable) cat.getTable(id);
                new ConsumerManager(t.fileIO(), t.location())
                        .resetConsumer(f[3], new Consumer(Long.parseLong(f[4])));
                return "";
            }
            case "TAG": {
                Table t = cat.getTable(id);
                if (f.length > 5) {
                    t.createTag(f[3], Long.parseLong(f[4]),
                            java.time.Duration.ofMillis(Long.parseLong(f[5])));
                } else {
                    t.createTag(f[3], Long.parseLong(f[4]));
                }
                return "";
            }
            default:
                throw new IllegalArgumentException("unknown command " + f[0]);
        }
    }

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(
                new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isEmpty()) {
                continue;
            }
            StringBuilder rows = new StringBuilder();
            String answer;
            try {
                answer = "OK " + run(line.split("\t", -1), rows);
            } catch (Throwable e) {
                Throwable c = e;
                while (c.getCause() != null && c.getMessage() == null) {
                    c = c.getCause();
                }
                answer = "ERR " + c.getClass().getSimpleName() + ": "
                        + String.valueOf(c.getMessage()).replace("\n", " ");
                rows.setLength(0);
            }
            System.out.println(answer);
            System.out.print(rows);
            System.out.flush();
        }
    }
}
