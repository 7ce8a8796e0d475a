package cluster

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"time"

	"github.com/icecdc/icecdc/sinks/kafka"
)

// Types of Config.Type.
const (
	TypeNone  = "none"  // one process follows every table (the default)
	TypeKafka = "kafka" // members of a Kafka consumer group share the tables
)

// Config is the cluster: section of the configuration.
type Config struct {
	// Type is TypeNone or TypeKafka. Default TypeNone.
	Type string `yaml:"type"`
	// Group is the consumer group the members join. Required for kafka.
	Group string `yaml:"group"`
	// Topic is the coordination topic whose partitions the group
	// assigns. Default "icecdc.cluster.<group>".
	Topic string `yaml:"topic"`
	// Partitions is the coordination topic's partition count: the most
	// members that can share the work. An existing topic must have
	// exactly this many. Default 64.
	Partitions int32 `yaml:"partitions"`
	// SessionTimeout is how long a member may go silent before the group
	// gives its tables to others (Kafka's session.timeout.ms, within the
	// broker's group.min/max.session.timeout.ms). Default 10s.
	SessionTimeout time.Duration `yaml:"session_timeout"`
	// InstanceID is this member's group.instance.id (KIP-345 static
	// membership): unique per member, and the same across its restarts.
	// Default <hostname>-<n>, n the lowest slot no other member of the
	// group on this host holds.
	InstanceID string `yaml:"instance_id"`
	// MinReplicas is the least replication factor the checkpoint topic
	// must have. Default: 3, or the number of brokers if fewer.
	MinReplicas int16 `yaml:"min_replicas"`
	// Kafka is the connection to the cluster's Kafka (brokers, tls, sasl,
	// client_id) and its checkpoint_topic. Default: sink.kafka's when the
	// sink is Kafka; required otherwise.
	Kafka kafka.Config `yaml:"kafka"`
}

// Enabled reports whether c asks for cluster mode.
func (c Config) Enabled() bool { return c.Type == TypeKafka }

// WithDefaults returns c with its defaults; sink is the sink's Kafka
// configuration (nil when the sink is not Kafka), whose connection and
// checkpoint topic the cluster uses unless c.Kafka gives brokers.
func (c Config) WithDefaults(sink *kafka.Config) Config {
	if c.Type == "" {
		c.Type = TypeNone
	}
	if c.Topic == "" && c.Group != "" {
		c.Topic = "icecdc.cluster." + c.Group
	}
	if c.Partitions == 0 {
		c.Partitions = 64
	}
	if c.SessionTimeout == 0 {
		c.SessionTimeout = 10 * time.Second
	}
	if len(c.Kafka.Brokers) == 0 && sink != nil {
		k := *sink
		c.Kafka = kafka.Config{Brokers: k.Brokers, TLS: k.TLS, SASL: k.SASL, ClientID: k.ClientID,
			CheckpointTopic: k.CheckpointTopic, TopicReplicationFactor: k.TopicReplicationFactor,
			Compression: k.Compression, Linger: k.Linger, BatchMaxBytes: k.BatchMaxBytes, MaxBufferedRecords: k.MaxBufferedRecords}
	}
	return c
}

// Validate checks a Config with its defaults; errors name the field.
func (c Config) Validate() error {
	var errs []error
	bad := func(field, format string, a ...any) {
		errs = append(errs, fmt.Errorf("config: cluster.%s: %s", field, fmt.Sprintf(format, a...)))
	}
	switch c.Type {
	case TypeNone:
		return nil
	case TypeKafka:
	default:
		bad("type", "%q: want none or kafka", c.Type)
		return errors.Join(errs...)
	}
	if c.Group == "" {
		bad("group", "required for cluster type kafka (the consumer group of the members)")
	}
	if c.Partitions < 1 || c.Partitions > 10000 {
		bad("partitions", "%d: want 1 to 10000", c.Partitions)
	}
	if c.SessionTimeout < time.Second {
		bad("session_timeout", "%s is too short (minimum 1s)", c.SessionTimeout)
	}
	if id := c.InstanceID; id != "" && (len(id) > 249 || strings.Trim(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") != "") {
		bad("instance_id", "%q: want at most 249 of the characters a-z, A-Z, 0-9, '.', '_' and '-' (Kafka's rule for group.instance.id)", id)
	}
	if c.MinReplicas < 0 {
		bad("min_replicas", "must not be negative")
	}
	if len(c.Kafka.Brokers) == 0 {
		bad("kafka.brokers", "required: the sink is not Kafka, so the cluster needs brokers of its own for coordination and checkpoints")
	}
	return errors.Join(errs...)
}

// Partition returns the coordination partition a table hashes to.
func Partition(table string, partitions int32) int32 {
	h := fnv.New32a()
	h.Write([]byte(table))
	return int32(h.Sum32() % uint32(partitions))
}

// Fingerprint digests what every member of one pipeline must agree on
// (the parts, in a fixed order, as the caller renders them), in 12 hex
// digits.
func Fingerprint(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		fmt.Fprintf(h, "%d:%s;", len(p), p)
	}
	return hex.EncodeToString(h.Sum(nil))[:12]
}

// clientIDPrefix starts the client id of every member; the id is
// icecdc/<version>/<fingerprint>/<member name>.
const clientIDPrefix = "icecdc/"

func clientID(version, fingerprint, name string) string {
	return clientIDPrefix + version + "/" + fingerprint + "/" + name
}

// parseClientID splits a member's client id; ok is false for a client
// that is not an icecdc member.
func parseClientID(id string) (version, fingerprint, name string, ok bool) {
	rest, ok := strings.CutPrefix(id, clientIDPrefix)
	if !ok {
		return "", "", "", false
	}
	parts := strings.SplitN(rest, "/", 3)
	if len(parts) != 3 {
		return "", "", "", false
	}
	return parts[0], parts[1], parts[2], true
}

// compareVersions orders two versions by their dotted numeric parts
// (anything after '-' or '+' is ignored): -1, 0 or 1. ok is false when
// either does not start with a number, and then only equality is known.
func compareVersions(a, b string) (cmp int, ok bool) {
	pa, oka := versionParts(a)
	pb, okb := versionParts(b)
	if !oka || !okb {
		return 0, false
	}
	for i := range max(len(pa), len(pb)) {
		var x, y int
		if i < len(pa) {
			x = pa[i]
		}
		if i < len(pb) {
			y = pb[i]
		}
		if x != y {
			if x < y {
				return -1, true
			}
			return 1, true
		}
	}
	return 0, true
}

func versionParts(v string) ([]int, bool) {
	v = strings.TrimPrefix(v, "v")
	if i := strings.IndexAny(v, "-+"); i >= 0 {
		v = v[:i]
	}
	var out []int
	for _, p := range strings.Split(v, ".") {
		n, err := strconv.Atoi(p)
		if err != nil {
			return nil, false
		}
		out = append(out, n)
	}
	return out, len(out) > 0
}
