import java.lang.management.ManagementFactory;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.opensearch.analysis.common.CommonAnalysisPlugin;
import org.opensearch.cluster.health.ClusterHealthStatus;
import org.opensearch.common.settings.Settings;
import org.opensearch.common.unit.TimeValue;
import org.opensearch.env.Environment;
import org.opensearch.node.InternalSettingsPreparer;
import org.opensearch.node.Node;
import org.opensearch.painless.PainlessPlugin;
import org.opensearch.plugins.Plugin;
import org.opensearch.transport.Netty4Plugin;

/**
 * One OpenSearch node of the interop stage, from Maven Central's jars: the
 * modules a distribution installs (HTTP and transport on Netty 4, the
 * common analyzers, painless) are plugins loaded from the class path, and
 * there is no security plugin. Single-node discovery, bound to loopback.
 *
 *   java -Xmx512m -cp 'JARS/*:CLASSES' OpenSearchNode path.home=DIR http.port=N [setting=value ...]
 *
 * Every argument is a node setting; path.home and http.port are required.
 * Once started, it sets the cluster's default replica count to 0 (one
 * node: a replica would stay unassigned and every index yellow), waits for
 * the cluster to be green and prints "opensearch node ready
 * http://127.0.0.1:N (green Ss after the JVM started)"; it closes the
 * node on SIGTERM. A start
 * that fails exits 1, naming why.
 */
public final class OpenSearchNode extends Node {
    static final List<Class<? extends Plugin>> PLUGINS =
        List.of(Netty4Plugin.class, CommonAnalysisPlugin.class, PainlessPlugin.class);

    OpenSearchNode(Environment env) {
        super(env, PLUGINS, true);
    }

    public static void main(String[] args) throws Exception {
        Settings.Builder b = Settings.builder()
            .put("cluster.name", "icecdc-interop")
            .put("node.name", "node-1")
            .put("discovery.type", "single-node")
            .put("network.host", "127.0.0.1")
            .put("transport.port", "0")
            // The stage's disks are shared and may be full past the default
            // watermarks; a read-only index would be a false failure.
            .put("cluster.routing.allocation.disk.threshold_enabled", false)
            .put("action.auto_create_index", true);
        for (String a : args) {
            int eq = a.indexOf('=');
            if (eq <= 0) {
                System.err.println("opensearch node: argument " + a + " is not setting=value");
                System.exit(2);
            }
            b.put(a.substring(0, eq), a.substring(eq + 1));
        }
        Settings s = b.build();
        for (String need : new String[] {"path.home", "http.port"}) {
            if (!s.hasValue(need)) {
                System.err.println("opensearch node: setting " + need + " is required");
                System.exit(2);
            }
        }
        Path home = Paths.get(s.get("path.home")).toAbsolutePath();
        Environment env = InternalSettingsPreparer.prepareEnvironment(s, Collections.emptyMap(), home.resolve("config"),
            () -> s.get("node.name"));
        OpenSearchNode node;
        try {
            node = new OpenSearchNode(env);
            node.start();
        } catch (Exception e) {
            System.err.println("opensearch node: did not start: " + e);
            e.printStackTrace();
            System.exit(1);
            return;
        }
        CountDownLatch closed = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try {
                node.close();
                node.awaitClose(30, TimeUnit.SECONDS);
            } catch (Exception e) {
                System.err.println("opensearch node: close: " + e);
            }
            closed.countDown();
        }, "opensearch-node-close"));
        try {
            // One node: an index's replicas would stay unassigned (yellow)
            // and tell nothing; the default is a persistent cluster setting
            // (it is no node setting), so a restarted node keeps it.
            node.client().admin().cluster().prepareUpdateSettings()
                .setPersistentSettings(Settings.builder().put("cluster.default_number_of_replicas", 0))
                .get(TimeValue.timeValueSeconds(60));
            ClusterHealthStatus status = node.client().admin().cluster().prepareHealth()
                .setWaitForGreenStatus().setTimeout(TimeValue.timeValueSeconds(120)).get().getStatus();
            if (status != ClusterHealthStatus.GREEN) {
                throw new IllegalStateException("cluster health " + status + " after 120s");
            }
        } catch (Exception e) {
            System.err.println("opensearch node: started, but not ready: " + e);
            e.printStackTrace();
            System.exit(1);
        }
        System.out.printf("opensearch node ready http://127.0.0.1:%s (green %.1fs after the JVM started)%n", s.get("http.port"),
            ManagementFactory.getRuntimeMXBean().getUptime() / 1000.0);
        System.out.flush();
        closed.await();
    }
}
