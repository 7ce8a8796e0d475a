// A Kafka Connect sink for the interop stage's unwrap part: it writes every
// record it is handed (after the connector's transforms) as one JSON line
// {"topic", "key", "value", "headers"}, the key and value as the worker's
// JsonConverter (schemas.enable=true) would write them to Kafka and the
// headers as Connect's SimpleHeaderConverter would, so that Debezium's
// ExtractNewRecordState output can be compared with icecdc's flattened
// topic byte for byte, record by record. A value Connect writes as no
// value at all (a tombstone) is null.
package io.icecdc.interop;

import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.util.Collection;
import java.util.List;
import java.util.Map;

import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.connector.Task;
import org.apache.kafka.connect.header.Header;
import org.apache.kafka.connect.json.JsonConverter;
import org.apache.kafka.connect.sink.SinkConnector;
import org.apache.kafka.connect.sink.SinkRecord;
import org.apache.kafka.connect.sink.SinkTask;
import org.apache.kafka.connect.storage.SimpleHeaderConverter;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

public class RecordFileSink extends SinkConnector {
    private Map<String, String> props;

    @Override
    public void start(Map<String, String> props) {
        this.props = props;
    }

    @Override
    public Class<? extends Task> taskClass() {
        return RecordTask.class;
    }

    @Override
    public List<Map<String, String>> taskConfigs(int maxTasks) {
        return List.of(props);
    }

    @Override
    public void stop() {
    }

    @Override
    public ConfigDef config() {
        return new ConfigDef().define("file", ConfigDef.Type.STRING, ConfigDef.Importance.HIGH, "the output file");
    }

    @Override
    public String version() {
        return "1";
    }

    public static class RecordTask extends SinkTask {
        private final ObjectMapper mapper = new ObjectMapper();
        private final JsonConverter keys = new JsonConverter();
        private final JsonConverter values = new JsonConverter();
        private final SimpleHeaderConverter headers = new SimpleHeaderConverter();
        private Writer out;

        @Override
        public void start(Map<String, String> props) {
            keys.configure(Map.of("schemas.enable", "true"), true);
            values.configure(Map.of("schemas.enable", "true"), false);
            headers.configure(Map.of());
            try {
                out = new OutputStreamWriter(new FileOutputStream(props.get("file"), true), StandardCharsets.UTF_8);
            }
            catch (IOException e) {
                throw new RuntimeException(e);
            }
        }

        @Override
        public void put(Collection<SinkRecord> records) {
            try {
                for (SinkRecord r : records) {
                    ObjectNode line = mapper.createObjectNode();
                    line.put("topic", r.topic());
                    line.put("key", text(keys.fromConnectData(r.topic(), r.keySchema(), r.key())));
                    line.put("value", text(values.fromConnectData(r.topic(), r.valueSchema(), r.value())));
                    ArrayNode hs = line.putArray("headers");
                    for (Header h : r.headers()) {
                        ArrayNode kv = hs.addArray();
                        kv.add(h.key());
                        kv.add(text(headers.fromConnectHeader(r.topic(), h.key(), h.schema(), h.value())));
                    }
                    out.write(mapper.writeValueAsString(line));
                    out.write('\n');
                }
                out.flush();
            }
            catch (IOException e) {
                throw new RuntimeException(e);
            }
        }

        private static String text(byte[] b) {
            return b == null ? null : new String(b, StandardCharsets.UTF_8);
        }

        @Override
        public void stop() {
            try {
                if (out != null) {
                    out.close();
                }
            }
            catch (IOException e) {
                throw new RuntimeException(e);
            }
        }

        @Override
        public String version() {
            return "1";
        }
    }
}
