// Runs Debezium's own ByLogicalTableRouter (debezium-connect-plugins) over
// the records of debezium/testdata/routed.jsonl as icecdc writes them to a
// table's own topic, read and written by Kafka Connect's JsonConverter, and
// compares each result with the record icecdc routes itself (read and
// written by the same converter, so that number forms compare alike).
// With a fourth argument, debezium/testdata/routed-unwrapped.jsonl, it
// runs each of its records through the router and ExtractNewRecordState
// chained in the order the line gives ("route,unwrap" or "unwrap,route",
// with its delete mode and add.fields), as Connect runs a transforms list,
// against the record icecdc writes with the same transforms.
// Prints one line per record and exits 1 when any differs.
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.debezium.transforms.ByLogicalTableRouter;
import io.debezium.transforms.ExtractNewRecordState;
import org.apache.kafka.connect.data.SchemaAndValue;
import org.apache.kafka.connect.json.JsonConverter;
import org.apache.kafka.connect.source.SourceRecord;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

public class RouteCheck {
    static final ObjectMapper om = new ObjectMapper();
    static final JsonConverter keys = new JsonConverter(), values = new JsonConverter();
    static ByLogicalTableRouter<SourceRecord> router;

    public static void main(String[] args) throws Exception {
        keys.configure(Map.of("schemas.enable", "true"), true);
        values.configure(Map.of("schemas.enable", "true"), false);
        router = new ByLogicalTableRouter<>();
        router.configure(Map.of("topic.regex", args[1], "topic.replacement", args[2]));
        int bad = check(args[0], "routed records", "Debezium's ByLogicalTableRouter");
        if (args.length > 3) {
            bad += check(args[3], "routed and flattened records", "Debezium's ByLogicalTableRouter and ExtractNewRecordState chained");
        }
        System.exit(bad == 0 ? 0 : 1);
    }

    // check runs each record of file through the transforms its line names
    // (the router alone without a "transforms" list) and compares the
    // result with the line's routed record; it returns how many differ.
    static int check(String file, String what, String against) throws Exception {
        List<String> lines = Files.readAllLines(Path.of(file), StandardCharsets.UTF_8);
        int bad = 0;
        for (String line : lines) {
            JsonNode rec = om.readTree(line);
            String topic = rec.get("topic").asText();
            SchemaAndValue k = keys.toConnectData(topic, bytes(rec.get("key")));
            SchemaAndValue v = values.toConnectData(topic, bytes(rec.get("value")));
            SourceRecord out = new SourceRecord(Map.of(), Map.of(), topic, null, k.schema(), k.value(), v.schema(), v.value());
            String label = "route";
            if (rec.has("transforms")) {
                Map<String, String> opts = new HashMap<>();
                opts.put("delete.tombstone.handling.mode", rec.get("delete_mode").asText());
                if (rec.has("add_fields")) {
                    opts.put("add.fields", rec.get("add_fields").asText());
                }
                ExtractNewRecordState<SourceRecord> unwrap = new ExtractNewRecordState<>();
                unwrap.configure(opts);
                StringBuilder chain = new StringBuilder();
                for (JsonNode t : rec.get("transforms")) {
                    out = t.asText().equals("route") ? router.apply(out) : unwrap.apply(out);
                    chain.append(chain.length() == 0 ? "" : ",").append(t.asText());
                }
                label = "transforms " + chain + " (" + rec.get("delete_mode").asText() + ")";
            } else {
                out = router.apply(out);
            }
            String routedTopic = rec.get("routed_topic").asText();
            JsonNode dbzKey = json(keys.fromConnectData(out.topic(), out.keySchema(), out.key()));
            JsonNode dbzValue = json(values.fromConnectData(out.topic(), out.valueSchema(), out.value()));
            JsonNode iceKey = roundTrip(keys, routedTopic, rec.get("routed_key"));
            JsonNode iceValue = roundTrip(values, routedTopic, rec.get("routed_value"));
            boolean equal = out.topic().equals(routedTopic) && dbzKey.equals(iceKey) && dbzValue.equals(iceValue);
            System.out.println(label + " " + topic + " -> " + out.topic() + ": " + (equal ? "equal" : "DIFFERENT"));
            if (!equal) {
                bad++;
                System.out.println("  debezium key:   " + dbzKey);
                System.out.println("  icecdc key:     " + iceKey);
                System.out.println("  debezium value: " + dbzValue);
                System.out.println("  icecdc value:   " + iceValue);
            }
        }
        System.out.println(what + ": " + (lines.size() - bad) + " of " + lines.size() + " equal to " + against);
        return bad;
    }

    // roundTrip reads n with the converter and writes it back, so that
    // number forms compare alike; a null is a tombstone.
    static JsonNode roundTrip(JsonConverter c, String topic, JsonNode n) throws Exception {
        if (n == null || n.isNull()) {
            return om.nullNode();
        }
        SchemaAndValue sv = c.toConnectData(topic, bytes(n));
        return json(c.fromConnectData(topic, sv.schema(), sv.value()));
    }

    static JsonNode json(byte[] b) throws Exception {
        return b == null ? om.nullNode() : om.readTree(b);
    }

    static byte[] bytes(JsonNode n) throws Exception {
        return om.writeValueAsBytes(n);
    }
}
