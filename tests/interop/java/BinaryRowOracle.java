// Test helper run against Apache Paimon 0.9 (the oracle's bridge jar): encodes rows with Paimon's
// generated projection (the code path used for partitions, keys and bucket keys), and renders
// partition paths and Java float/double strings. Protocol: one command per stdin line.
//   T <type>;<type>;...        set the row type (Paimon SQL atomic types)
//   V <v>;<v>;...              -> "<row hex> <hashCode>"
//   P <v>;<v>;...              -> partition path (all columns are partition keys f0, f1, ...)
//   D <hex bits> / F <hex bits> -> Double.toString / Float.toString
// Values: \N null; BOOLEAN true/false; integers decimal; FLOAT/DOUBLE raw bits in hex; DECIMAL the
// unscaled integer; CHAR/VARCHAR/BINARY hex bytes; DATE days; TIME millis; TIMESTAMP millis:nanos.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;

import org.apache.paimon.codegen.CodeGenUtils;
import org.apache.paimon.codegen.Projection;
import org.apache.paimon.data.BinaryRow;
import org.apache.paimon.data.BinaryString;
import org.apache.paimon.data.Decimal;
import org.apache.paimon.data.GenericRow;
import org.apache.paimon.data.Timestamp;
import org.apache.paimon.types.DataType;
import org.apache.paimon.types.DataTypeJsonParser;
import org.apache.paimon.types.DecimalType;
import org.apache.paimon.types.RowType;
import org.apache.paimon.utils.InternalRowPartitionComputer;
import org.apache.paimon.utils.PartitionPathUtils;

public class BinaryRowOracle {
    static byte[] unhex(String s) {
        byte[] b = new byte[s.length() / 2];
        for (int i = 0; i < b.length; i++) {
            b[i] = (byte) Integer.parseInt(s.substring(2 * i, 2 * i + 2), 16);
        }
        return b;
    }

    static String hex(byte[] b, int off, int len) {
        StringBuilder sb = new StringBuilder();
        for (int i = off; i < off + len; i++) {
            sb.append(String.format("%02x", b[i] & 0xff));
        }
        return sb.toString();
    }

    static Object value(DataType t, String s) {
        if (s.equals("\\N")) {
            return null;
        }
        switch (t.getTypeRoot()) {
            case BOOLEAN: return Boolean.parseBoolean(s);
            case TINYINT: return Byte.parseByte(s);
            case SMALLINT: return Short.parseShort(s);
            case INTEGER: case DATE: case TIME_WITHOUT_TIME_ZONE: return Integer.parseInt(s);
            case BIGINT: return Long.parseLong(s);
            case FLOAT: return Float.intBitsToFloat((int) Long.parseLong(s, 16));
            case DOUBLE: return Double.longBitsToDouble(new BigInteger(s, 16).longValue());
            case DECIMAL: {
                DecimalType d = (DecimalType) t;
                return Decimal.fromBigDecimal(
                        new BigDecimal(new BigInteger(s), d.getScale()), d.getPrecision(), d.getScale());
            }
            case CHAR: case VARCHAR: return BinaryString.fromBytes(unhex(s));
            case BINARY: case VARBINARY: return unhex(s);
            case TIMESTAMP_WITHOUT_TIME_ZONE: case TIMESTAMP_WITH_LOCAL_TIME_ZONE: {
                String[] p = s.split(":");
                return Timestamp.fromEpochMillis(Long.parseLong(p[0]), Integer.parseInt(p[1]));
            }
            default: throw new IllegalArgumentException("unsupported " + t);
        }
    }

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        StringBuilder out = new StringBuilder();
        List<DataType> types = new ArrayList<>();
        RowType rowType = null;
        Projection projection = null;
        InternalRowPartitionComputer computer = null;
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isEmpty()) {
                continue;
            }
            char cmd = line.charAt(0);
            String arg = line.length() > 2 ? line.substring(2) : "";
            if (cmd == 'T') {
                types.clear();
                for (String ts : arg.split(";")) {
                    types.add(DataTypeJsonParser.parseAtomicTypeSQLString(ts));
                }
                rowType = RowType.of(types.toArray(new DataType[0]));
                int[] mapping = new int[types.size()];
                String[] names = new String[types.size()];
                for (int i = 0; i < mapping.length; i++) {
                    mapping[i] = i;
                    names[i] = "f" + i;
                }
                projection = CodeGenUtils.newProjection(rowType, mapping);
                computer = new InternalRowPartitionComputer("__DEFAULT_PARTITION__", rowType, names);
                out.append("ok\n");
            } else if (cmd == 'V' || cmd == 'P') {
                String[] vs = arg.split(";", -1);
                GenericRow row = new GenericRow(types.size());
                for (int i = 0; i < types.size(); i++) {
                    row.setField(i, value(types.get(i), vs[i]));
                }
                if (cmd == 'V') {
                    BinaryRow b = projection.apply(row);
                    byte[] bytes = b.toBytes();
                    out.append(hex(bytes, 0, bytes.length)).append(' ').append(b.hashCode()).append('\n');
                } else {
                    LinkedHashMap<String, String> spec = computer.generatePartValues(row);
                    out.append(PartitionPathUtils.generatePartitionPath(spec)).append('\n');
                }
            } else if (cmd == 'D') {
                out.append(Double.toString(Double.longBitsToDouble(new BigInteger(arg, 16).longValue()))).append('\n');
            } else if (cmd == 'F') {
                out.append(Float.toString(Float.intBitsToFloat((int) Long.parseLong(arg, 16)))).append('\n');
            } else {
                throw new IllegalArgumentException("bad command " + line);
            }
        }
        System.out.print(out);
        System.out.flush();
    }
}
