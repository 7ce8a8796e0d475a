// Prints what Debezium's own column mappers (debezium-connector-common's
// MaskStrings and TruncateColumn) make of a fixed set of values, one JSON
// object per line: the option, the input (repeated "repeat" times) and the
// output. shape/testdata/debezium-masks.jsonl holds this output; the
// interop part masks (interop/parts/masks.sh) runs it again and compares,
// and cdc's tests check icecdc's masks against the file.
import io.debezium.relational.Column;
import io.debezium.relational.ValueConverter;
import io.debezium.relational.mapping.ColumnMapper;
import io.debezium.relational.mapping.MaskStrings;
import io.debezium.relational.mapping.TruncateColumn;

import java.nio.charset.StandardCharsets;
import java.sql.Types;

public class MaskVectors {
    static final String SALT = "CzQMA0cB5K";
    static final String[] ALGORITHMS = {"MD5", "SHA-1", "SHA-256", "SHA-512", "SHA-512/256", "SHA3-256", "sha-384"};
    static final String[] VALUES = {"hello", "", "Grüße, 東京", "a\u0000b", "\uD83D\uDE00 smile", "jane.doe@example.com", null};

    public static void main(String[] args) throws Exception {
        if (!"UTF-8".equals(java.nio.charset.Charset.defaultCharset().name())) {
            throw new IllegalStateException("run with -Dfile.encoding=UTF-8: Debezium's v2 hash takes the default charset's bytes");
        }
        Column col = Column.editor().name("c").jdbcType(Types.VARCHAR).type("VARCHAR").create();
        for (String alg : ALGORITHMS) {
            for (int v = 1; v <= 2; v++) {
                MaskStrings.HashingByteArrayStrategy strategy = v == 1 ? MaskStrings.HashingByteArrayStrategy.V1 : MaskStrings.HashingByteArrayStrategy.V2;
                ColumnMapper m = new MaskStrings(SALT.getBytes(StandardCharsets.UTF_8), alg, strategy);
                String option = "column.mask.hash." + (v == 2 ? "v2." : "") + alg + ".with.salt." + SALT;
                for (String value : VALUES) {
                    print(option, value, 1, m.create(col));
                }
                // Past 65535 bytes Java serializes a string as TC_LONGSTRING.
                print(option, "x", 70000, m.create(col));
            }
        }
        ColumnMapper mask = new MaskStrings("*****");
        for (String value : VALUES) {
            print("column.mask.with.5.chars", value, 1, mask.create(col));
        }
        ColumnMapper trunc = new TruncateColumn(4);
        for (String value : new String[] {"hello", "abc", "abcd", "Grüße", "\uD83D\uDE00ab", "a\uD83D\uDE00b", null}) {
            print("column.truncate.to.4.chars", value, 1, trunc.create(col));
        }
    }

    static void print(String option, String value, int repeat, ValueConverter conv) {
        String input = value == null ? null : value.repeat(repeat);
        Object out = conv.convert(input);
        StringBuilder b = new StringBuilder("{\"option\":").append(json(option));
        b.append(",\"input\":").append(json(value));
        if (repeat != 1) {
            b.append(",\"repeat\":").append(repeat);
        }
        b.append(",\"output\":").append(json((String) out)).append('}');
        System.out.println(b);
    }

    static String json(String s) {
        if (s == null) {
            return "null";
        }
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') {
                b.append('\\').append(c);
            }
            else if (c < 0x20 || c > 0x7e) {
                b.append(String.format("\\u%04x", (int) c));
            }
            else {
                b.append(c);
            }
        }
        return b.append('"').toString();
    }
}
