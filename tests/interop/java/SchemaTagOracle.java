// Test helper run against Apache Paimon 0.9 (the oracle's bridge jar): performs ALTER TABLE and
// tag operations with Paimon's own Catalog / Table API, and reads a table at a tag or snapshot.
// Protocol: one command per stdin line, fields separated by TAB; every command answers one line
// "OK ..." or "ERR <exception class>: <message>" (READ answers "OK <n>" then n "R ..." lines).
//   ALTER <wh> <db.table> <change>...   change = parts separated by \u0001:
//       add|name|typeJson|desc|first|after   rename|old|new   drop|name   type|name|typeJson
//       null|a.b|true/false   ccomment|a.b|text   set|k|v   remove|k   comment|text
//       move|name|FIRST/LAST/AFTER/BEFORE|reference
//     -> OK <latest schema JSON on one line>
//   TAG <wh> <db.table> <name> <snapshotId> [retainedMillis] -> OK
//   TAGS <wh> <db.table>                             -> OK name=id,name=id (sorted by name)
//   READ <wh> <db.table> <key> <value>               -> rows read with dynamic option key=value
// Rows are printed as "R " + values joined by TAB (String.valueOf of the internal value), sorted.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import org.apache.paimon.catalog.Catalog;
import org.apache.paimon.catalog.CatalogContext;
import org.apache.paimon.catalog.CatalogFactory;
import org.apache.paimon.catalog.Identifier;
import org.apache.paimon.data.InternalRow;
import org.apache.paimon.options.Options;
import org.apache.paimon.reader.RecordReader;
import org.apache.paimon.schema.SchemaChange;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.paimon.table.FileStoreTable;
import org.apache.paimon.table.Table;
import org.apache.paimon.table.source.ReadBuilder;
import org.apache.paimon.types.DataField;
import org.apache.paimon.types.DataType;
import org.apache.paimon.types.DataTypeJsonParser;
import org.apache.paimon.utils.JsonSerdeUtil;

public class SchemaTagOracle {
    static Catalog catalog(String wh) {
        Options o = new Options();
        o.set("warehouse", wh);
        o.set("cache-enabled", "false");
        return CatalogFactory.createCatalog(CatalogContext.create(o));
    }

    static DataType type(String json) {
        JsonNode node = JsonSerdeUtil.fromJson(json, JsonNode.class);
        return DataTypeJsonParser.parseDataType(node);
    }

    static SchemaChange change(String spec) {
        String[] p = spec.split("\u0001", -1);
        switch (p[0]) {
            case "add": {
                String desc = p[3].isEmpty() ? null : p[3];
                SchemaChange.Move move = null;
                if (p[4].equals("true")) {
                    move = SchemaChange.Move.first(p[1]);
                } else if (!p[5].isEmpty()) {
                    move = SchemaChange.Move.after(p[1], p[5]);
                }
                return SchemaChange.addColumn(p[1], type(p[2]), desc, move);
            }
            case "rename": return SchemaChange.renameColumn(p[1], p[2]);
            case "drop": return SchemaChange.dropColumn(p[1]);
            case "type": return SchemaChange.updateColumnType(p[1], type(p[2]));
            case "null": return SchemaChange.updateColumnNullability(p[1].split("\\."),
                    Boolean.parseBoolean(p[2]));
            case "ccomment": return SchemaChange.updateColumnComment(p[1].split("\\."), p[2]);
            case "set": return SchemaChange.setOption(p[1], p[2]);
            case "remove": return SchemaChange.removeOption(p[1]);
            case "comment": return SchemaChange.updateComment(p[1]);
            case "move": {
                switch (p[2]) {
                    case "FIRST": return SchemaChange.updateColumnPosition(
                            SchemaChange.Move.first(p[1]));
                    case "LAST": return SchemaChange.updateColumnPosition(
                            SchemaChange.Move.last(p[1]));
                    case "AFTER": return SchemaChange.updateColumnPosition(
                            SchemaChange.Move.after(p[1], p[3]));
                    default: return SchemaChange.updateColumnPosition(
                            SchemaChange.Move.before(p[1], p[3]));
                }
            }
            default: throw new IllegalArgumentException("unknown change " + p[0]);
        }
    }

    static String run(String[] f, StringBuilder rows) throws Exception {
        Catalog cat = catalog(f[1]);
        Identifier id = Identifier.fromString(f[2]);
        switch (f[0]) {
            case "ALTER": {
                List<SchemaChange> changes = new ArrayList<>();
                for (int i = 3; i < f.length; i++) {
                    changes.add(change(f[i]));
                }
                cat.alterTable(id, changes, false);
                return String.valueOf(((FileStoreTable) cat.getTable(id)).schema().id());
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
            case "TAGS": {
                FileStoreTable t = (FileStoreTable) cat.getTable(id);
                TreeMap<String, Long> out = new TreeMap<>();
                for (String name : t.tagManager().allTagNames()) {
                    out.put(name, t.tagManager().taggedSnapshot(name).id());
                }
                StringBuilder sb = new StringBuilder();
                for (Map.Entry<String, Long> e : out.entrySet()) {
                    sb.append(sb.length() == 0 ? "" : ",").append(e.getKey()).append("=")
                            .append(e.getValue());
                }
                return sb.toString();
            }
            case "READ": {
                Map<String, String> dyn = new HashMap<>();
                dyn.put(f[3], f[4]);
                Table t = cat.getTable(id).copy(dyn);
                ReadBuilder rb = t.newReadBuilder();
                List<DataField> fields = t.rowType().getFields();
                InternalRow.FieldGetter[] getters = new InternalRow.FieldGetter[fields.size()];
                for (int i = 0; i < getters.length; i++) {
                    getters[i] = InternalRow.createFieldGetter(fields.get(i).type(), i);
                }
                List<String> lines = new ArrayList<>();
                try (RecordReader<InternalRow> reader =
                        rb.newRead().createReader(rb.newScan().plan())) {
                    reader.forEachRemaining(row -> {
                        StringBuilder sb = new StringBuilder("R ");
                        for (int i = 0; i < getters.length; i++) {
                            sb.append(i == 0 ? "" : "\t")
                                    .append(String.valueOf(getters[i].getFieldOrNull(row)));
                        }
                        lines.add(sb.toString());
                    });
                }
                Collections.sort(lines);
                for (String l : lines) {
                    rows.append(l).append("\n");
                }
                return String.valueOf(lines.size());
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
