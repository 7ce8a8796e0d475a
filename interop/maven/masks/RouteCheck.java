// Runs Debezium's own ByLogicalTableRouter (debezium-connect-plugins) over
// the records of debezium/testdata/routed.jsonl as icecdc writes them to a
// table's own topic, read and written by Kafka Connect's JsonConverter, and
// compares each result with the record icecdc routes itself (read and
// written by the same converter, so that number forms compare alike).
// Prints one line per record and exits 1 when any differs.
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.debezium.transforms.ByLogicalTableRouter;
import org.apache.kafka.connect.data.SchemaAndValue;
import org.apache.kafka.connect.json.JsonConverter;
import org.apache.kafka.connect.source.SourceRecord;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
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
        System.exit(bad == 0 ? 0 : 1);
    }

    static byte[] bytes(ObjectMapper om, JsonNode n) throws Exception {
        return om.writeValueAsBytes(n);
    }
}
