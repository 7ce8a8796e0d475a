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
    public static void main(String[] args) throws Exception {
        ObjectMapper om = new ObjectMapper();
        JsonConverter keys = new JsonConverter(), values = new JsonConverter();
        keys.configure(Map.of("schemas.enable", "true"), true);
        values.configure(Map.of("schemas.enable", "true"), false);
        ByLogicalTableRouter<SourceRecord> router = new ByLogicalTableRouter<>();
        router.configure(Map.of("topic.regex", args[1], "topic.replacement", args[2]));
        List<String> lines = Files.readAllLines(Path.of(args[0]), StandardCharsets.UTF_8);
        int bad = 0;
        for (String line : lines) {
            JsonNode rec = om.readTree(line);
            String topic = rec.get("topic").asText();
            SchemaAndValue k = keys.toConnectData(topic, bytes(om, rec.get("key")));
            SchemaAndValue v = values.toConnectData(topic, bytes(om, rec.get("value")));
            SourceRecord in = new SourceRecord(Map.of(), Map.of(), topic, null, k.schema(), k.value(), v.schema(), v.value());
            SourceRecord out = router.apply(in);
            String routedTopic = rec.get("routed_topic").asText();
            JsonNode dbzKey = om.readTree(keys.fromConnectData(out.topic(), out.keySchema(), out.key()));
            JsonNode dbzValue = om.readTree(values.fromConnectData(out.topic(), out.valueSchema(), out.value()));
            SchemaAndValue ik = keys.toConnectData(routedTopic, bytes(om, rec.get("routed_key")));
            SchemaAndValue iv = values.toConnectData(routedTopic, bytes(om, rec.get("routed_value")));
            JsonNode iceKey = om.readTree(keys.fromConnectData(routedTopic, ik.schema(), ik.value()));
            JsonNode iceValue = om.readTree(values.fromConnectData(routedTopic, iv.schema(), iv.value()));
            boolean equal = out.topic().equals(routedTopic) && dbzKey.equals(iceKey) && dbzValue.equals(iceValue);
            System.out.println("route " + topic + " -> " + out.topic() + ": " + (equal ? "equal" : "DIFFERENT"));
            if (!equal) {
                bad++;
                System.out.println("  debezium key: " + dbzKey);
                System.out.println("  icecdc key:   " + iceKey);
                if (!dbzValue.equals(iceValue)) {
                    System.out.println("  debezium value schema: " + dbzValue.get("schema"));
                    System.out.println("  icecdc value schema:   " + iceValue.get("schema"));
                }
            }
        }
        System.out.println("routed records: " + (lines.size() - bad) + " of " + lines.size() + " equal to Debezium's ByLogicalTableRouter");
        if (args.length > 3) {
            List<String> chained = Files.readAllLines(Path.of(args[3]), StandardCharsets.UTF_8);
            int chainBad = 0;
            for (String line : chained) {
                JsonNode rec = om.readTree(line);
                String topic = rec.get("topic").asText();
                SchemaAndValue k = keys.toConnectData(topic, bytes(om, rec.get("key")));
                SchemaAndValue v = values.toConnectData(topic, bytes(om, rec.get("value")));
                SourceRecord out = new SourceRecord(Map.of(), Map.of(), topic, null, k.schema(), k.value(), v.schema(), v.value());
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
                String routedTopic = rec.get("routed_topic").asText();
                JsonNode dbzKey = om.readTree(keys.fromConnectData(out.topic(), out.keySchema(), out.key()));
                byte[] dv = values.fromConnectData(out.topic(), out.valueSchema(), out.value());
                JsonNode dbzValue = dv == null ? om.nullNode() : om.readTree(dv);
                SchemaAndValue ik = keys.toConnectData(routedTopic, bytes(om, rec.get("routed_key")));
                JsonNode iceKey = om.readTree(keys.fromConnectData(routedTopic, ik.schema(), ik.value()));
                JsonNode iceValue = om.nullNode();
                if (!rec.get("routed_value").isNull()) {
                    SchemaAndValue iv = values.toConnectData(routedTopic, bytes(om, rec.get("routed_value")));
                    byte[] b = values.fromConnectData(routedTopic, iv.schema(), iv.value());
                    iceValue = b == null ? om.nullNode() : om.readTree(b);
                }
                boolean equal = out.topic().equals(routedTopic) && dbzKey.equals(iceKey) && dbzValue.equals(iceValue);
                System.out.println("transforms " + chain + " (" + rec.get("delete_mode").asText() + ") " + topic + " -> " + out.topic() + ": " + (equal ? "equal" : "DIFFERENT"));
                if (!equal) {
                    chainBad++;
                    System.out.println("  debezium key:   " + dbzKey);
                    System.out.println("  icecdc key:     " + iceKey);
                    System.out.println("  debezium value: " + dbzValue);
                    System.out.println("  icecdc value:   " + iceValue);
                }
            }
            System.out.println("routed and flattened records: " + (chained.size() - chainBad) + " of " + chained.size()
                    + " equal to Debezium's ByLogicalTableRouter and ExtractNewRecordState chained");
            bad += chainBad;
        }
        System.exit(bad == 0 ? 0 : 1);
    }

    static byte[] bytes(ObjectMapper om, JsonNode n) throws Exception {
        return om.writeValueAsBytes(n);
    }
}
