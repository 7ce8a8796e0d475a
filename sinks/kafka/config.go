package kafka

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/sinks/sinkkind"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// Delivery guarantees a Sink can give.
const (
	// AtLeastOnce produces with an idempotent producer; a crash between
	// the broker's ack and the pipeline's checkpoint replays events, which
	// consumers drop by their stable id.
	AtLeastOnce = "at-least-once"
	// ExactlyOnce produces each batch in a Kafka transaction together with
	// its checkpoint record, so read_committed consumers see every event
	// once and the checkpoint topic is the position of record.
	ExactlyOnce = "exactly-once"
)

// SASL mechanisms a Config may name.
const (
	SASLPlain       = "PLAIN"
	SASLScramSHA256 = "SCRAM-SHA-256"
	SASLScramSHA512 = "SCRAM-SHA-512"
)

// DefaultTopic is the topic template used when Config.Topic is empty.
const DefaultTopic = "icecdc.{namespace}.{table}"

// DefaultTransactionTopic is the topic of transaction records when
// Config.TransactionTopic is empty: Debezium's <topic.prefix>.transaction
// with the default prefix.
const DefaultTransactionTopic = "icecdc.transaction"

// DefaultSchemaChangeTopic is the topic of schema-change records when
// Config.SchemaChangeTopic is empty: <topic.prefix>.schema-changes with the
// default prefix.
const DefaultSchemaChangeTopic = "icecdc.schema-changes"

// The producer's defaults (Config.Compression, Linger, BatchMaxBytes,
// MaxBufferedRecords).
const (
	DefaultCompression        = CompressionSnappy
	DefaultLinger             = 5 * time.Millisecond
	DefaultBatchMaxBytes      = 1000012
	DefaultMaxBufferedRecords = 100_000
)

// Compression codecs a Config may name.
const (
	CompressionLZ4    = "lz4"
	CompressionZstd   = "zstd"
	CompressionSnappy = "snappy"
	CompressionGzip   = "gzip"
	CompressionNone   = "none"
)

// DefaultCheckpointTopic is the compacted topic exactly-once delivery
// keeps checkpoints in when Config.CheckpointTopic is empty.
const DefaultCheckpointTopic = "icecdc.checkpoints"

// Config configures a Kafka sink. The zero value of every field but
// Brokers (and Pipeline, where it is needed) is a usable default.
type Config struct {
	// Brokers are the seed brokers, host:port (the port defaults to 9092).
	// Required.
	Brokers []string `yaml:"brokers"`
	// Topic is the template of the topic a table's events go to, with the
	// placeholders {namespace}, {table}, {catalog} and {pipeline}.
	// Default DefaultTopic, "icecdc.{namespace}.{table}".
	Topic string `yaml:"topic"`
	// Route, when set, maps the topic the template gives a table to the
	// one its events go to (transforms of type ByLogicalTableRouter).
	Route func(topic string) string `yaml:"-"`
	// Delivery is AtLeastOnce or ExactlyOnce. Default AtLeastOnce.
	Delivery string `yaml:"delivery"`
	// Tombstones makes the sink follow every delete event with a record
	// of the same key and a null value, so that log compaction can drop
	// the key. Default true, as Debezium's tombstones.on.delete.
	Tombstones *bool `yaml:"tombstones"`
	// TombstoneHeaders are the headers of every tombstone (a flattened
	// stream's, whose add.headers name op). Default none.
	TombstoneHeaders []cdc.Header `yaml:"-"`
	// Transactions, when set, makes the sink write Debezium's transaction
	// metadata to TransactionTopic: a BEGIN record with a batch that
	// starts a snapshot's events, an END record (with the event count)
	// with the batch that ends them, encoded by Transactions and keyed by
	// the transaction id. Default nil: none.
	Transactions cdc.TransactionEncoder `yaml:"-"`
	// TransactionTopic is the topic of transaction records, created with
	// one partition. Default DefaultTransactionTopic.
	TransactionTopic string `yaml:"-"`
	// SchemaChangeTopic is the topic of the schema-change records that
	// batches carry (cdc.Batch.SchemaChange), created with one partition.
	// Default DefaultSchemaChangeTopic.
	SchemaChangeTopic string `yaml:"-"`
	// CloudEvents adds the headers of the CloudEvents Kafka protocol
	// binding's binary mode to every event record: ce_specversion (1.0),
	// ce_id (the event id), ce_source (icecdc/<pipeline>/<namespace>.<table>),
	// ce_type (io.icecdc.change.<op>), ce_time (the commit time, RFC 3339),
	// ce_subject (the record key) and content-type (application/json); the
	// record value is the event's data. Default false.
	CloudEvents bool `yaml:"cloudevents"`
	// TLS configures encryption to the brokers. Default: plaintext.
	TLS TLS `yaml:"tls"`
	// SASL configures authentication. Default: none.
	SASL SASL `yaml:"sasl"`
	// ClientID is the client id the brokers see in their logs and quotas.
	// Default "icecdc".
	ClientID string `yaml:"client_id"`
	// TransactionalID identifies the transactional producer in
	// exactly-once mode; a second producer with the same id fences the
	// first, so two daemons never commit for one pipeline. Default
	// "icecdc-<Pipeline>". Ignored at least once.
	TransactionalID string `yaml:"transactional_id"`
	// CheckpointTopic is the compacted topic of exactly-once checkpoints.
	// Default DefaultCheckpointTopic, "icecdc.checkpoints". Ignored at
	// least once.
	CheckpointTopic string `yaml:"checkpoint_topic"`
	// TopicPartitions is the partition count of event topics the sink
	// creates. Default 0: the broker's num.partitions.
	TopicPartitions int32 `yaml:"topic_partitions"`
	// TopicReplicationFactor is the replication factor of the topics the
	// sink creates. Default 0: the broker's default.replication.factor.
	TopicReplicationFactor int16 `yaml:"topic_replication_factor"`
	// Compression is the codec record batches are compressed with:
	// "snappy", "lz4", "zstd", "gzip" or "none". Default
	// DefaultCompression (snappy). A batch goes uncompressed when
	// compressing does not make it smaller.
	Compression string `yaml:"compression"`
	// Linger is how long a partition waits for more records before it
	// sends what it has. Each Write waits for its own records' acks and
	// sends them at once, without lingering; the linger applies to the
	// records produced meanwhile by others (heartbeats, tables writing to
	// the same partitions). Default DefaultLinger, 5ms (Kafka 4's
	// linger.ms); a negative value: none.
	Linger time.Duration `yaml:"linger"`
	// BatchMaxBytes is the most bytes of one record batch (before
	// compression), at most the topic's max.message.bytes. Default
	// DefaultBatchMaxBytes, 1000012 (the broker default's
	// max.message.bytes, less its overhead).
	BatchMaxBytes int32 `yaml:"batch_max_bytes"`
	// MaxBufferedRecords is the most records the client holds unacknowledged,
	// across the tables of the pipeline; a Write past it waits. Default
	// DefaultMaxBufferedRecords, 100000.
	MaxBufferedRecords int `yaml:"max_buffered_records"`
	// Pipeline is the pipeline's name: the {pipeline} placeholder, the
	// default transactional id and the prefix of checkpoint keys. It comes
	// from the top-level name of the configuration, not from the sink's
	// section. Required in exactly-once mode and when Topic uses it.
	Pipeline string `yaml:"-"`
	// Logger receives the few lifecycle messages the sink logs. Default
	// slog.Default().
	Logger *slog.Logger `yaml:"-"`
	// Encoding says what the records are: the CloudEvents subject is its
	// row key, the content-type header its media type (zero: JSON values,
	// keys as they are).
	Encoding cdc.Encoding `yaml:"-"`
	// Owner, when set, names the writer of each checkpoint record: its
	// member and group generation travel as the record's headers
	// "owner" and "generation" (cluster mode), so that the checkpoint
	// topic tells who held a table when. Default nil: no such headers.
	Owner func() (member string, generation int32) `yaml:"-"`

	// clientOpts are appended to the client options; tests use them to
	// shorten timeouts against kfake.
	clientOpts []kgo.Opt
}

// TLS configures TLS to the brokers.
type TLS struct {
	// Enable turns TLS on; it is implied by any other field. Default false.
	Enable bool `yaml:"enable"`
	// CAFile is a PEM file of the CAs to trust. Default: the system pool.
	CAFile string `yaml:"ca_file"`
	// CertFile and KeyFile are a PEM client certificate and its key, for
	// brokers that authenticate clients by certificate. Default: none.
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
	// InsecureSkipVerify accepts any broker certificate. For tests only.
	// Default false.
	InsecureSkipVerify bool `yaml:"insecure_skip_verify"`
}

func (t TLS) enabled() bool {
	return t.Enable || t.CAFile != "" || t.CertFile != "" || t.KeyFile != "" || t.InsecureSkipVerify
}

// SASL configures SASL authentication.
type SASL struct {
	// Mechanism is SASLPlain, SASLScramSHA256 or SASLScramSHA512
	// (case-insensitive). Default "": no SASL.
	Mechanism string `yaml:"mechanism"`
	// User and Password are the credentials. Default empty.
	User     string `yaml:"user"`
	Password string `yaml:"password"`
}

// String keeps the password out of logs and error messages that print a
// Config.
func (s SASL) String() string {
	if s.Mechanism == "" {
		return "{}"
	}
	return fmt.Sprintf("{%s user=%s password=[redacted]}", s.Mechanism, s.User)
}

// LogValue keeps the password out of structured logs.
func (s SASL) LogValue() slog.Value { return slog.StringValue(s.String()) }

// withDefaults returns c with its empty fields set to their defaults.
func (c Config) withDefaults() Config {
	if c.Topic == "" {
		c.Topic = DefaultTopic
	}
	if c.Delivery == "" {
		c.Delivery = AtLeastOnce
	}
	if c.ClientID == "" {
		c.ClientID = "icecdc"
	}
	if c.TransactionalID == "" && c.Pipeline != "" {
		c.TransactionalID = "icecdc-" + c.Pipeline
	}
	if c.CheckpointTopic == "" {
		c.CheckpointTopic = DefaultCheckpointTopic
	}
	if c.Tombstones == nil {
		on := true
		c.Tombstones = &on
	}
	if c.TransactionTopic == "" {
		c.TransactionTopic = DefaultTransactionTopic
	}
	if c.TopicPartitions == 0 {
		c.TopicPartitions = -1 // CreateTopics v4+: the broker's default
	}
	if c.TopicReplicationFactor == 0 {
		c.TopicReplicationFactor = -1
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Compression == "" {
		c.Compression = DefaultCompression
	}
	if c.Linger == 0 {
		c.Linger = DefaultLinger
	}
	if c.BatchMaxBytes == 0 {
		c.BatchMaxBytes = DefaultBatchMaxBytes
	}
	if c.MaxBufferedRecords == 0 {
		c.MaxBufferedRecords = DefaultMaxBufferedRecords
	}
	return c
}

// producerOpts are the options of the producing client that Config sets:
// compression, linger, batch size and buffer.
func (c Config) producerOpts() []kgo.Opt {
	codec := map[string]kgo.CompressionCodec{
		CompressionLZ4: kgo.Lz4Compression(), CompressionZstd: kgo.ZstdCompression(), CompressionSnappy: kgo.SnappyCompression(),
		CompressionGzip: kgo.GzipCompression(), CompressionNone: kgo.NoCompression(),
	}[strings.ToLower(c.Compression)]
	return []kgo.Opt{
		// A broker that cannot read the codec (zstd needs Kafka 2.1) is
		// sent the batch uncompressed.
		kgo.ProducerBatchCompression(codec, kgo.NoCompression()),
		kgo.ProducerLinger(max(c.Linger, 0)),
		kgo.ProducerBatchMaxBytes(c.BatchMaxBytes),
		kgo.MaxBufferedRecords(c.MaxBufferedRecords),
	}
}

// validate checks a Config that has its defaults; errors name the field.
func (c Config) validate() error {
	var errs []error
	if len(c.Brokers) == 0 {
		errs = append(errs, errors.New("brokers: none given"))
	}
	switch c.Delivery {
	case AtLeastOnce:
	case ExactlyOnce:
		if c.Pipeline == "" {
			errs = append(errs, errors.New("pipeline: required for exactly-once delivery (checkpoint keys and the transactional id name it)"))
		}
		if err := validTopicName(c.CheckpointTopic); err != nil {
			errs = append(errs, fmt.Errorf("checkpoint_topic: %w", err))
		}
	default:
		errs = append(errs, fmt.Errorf("delivery: %q is neither %q nor %q", c.Delivery, AtLeastOnce, ExactlyOnce))
	}
	if c.Transactions != nil {
		if err := validTopicName(c.TransactionTopic); err != nil {
			errs = append(errs, fmt.Errorf("transaction topic: %w", err))
		}
	}
	if err := sinkkind.CheckNameTemplate(c.Topic, c.Pipeline); err != nil {
		errs = append(errs, fmt.Errorf("topic: %w", err))
	}
	switch strings.ToUpper(c.SASL.Mechanism) {
	case "", SASLPlain, SASLScramSHA256, SASLScramSHA512:
	default:
		errs = append(errs, fmt.Errorf("sasl.mechanism: %q is not one of %s, %s, %s", c.SASL.Mechanism, SASLPlain, SASLScramSHA256, SASLScramSHA512))
	}
	switch strings.ToLower(c.Compression) {
	case CompressionLZ4, CompressionZstd, CompressionSnappy, CompressionGzip, CompressionNone:
	default:
		errs = append(errs, fmt.Errorf("compression: %q: want %s, %s, %s, %s or %s", c.Compression,
			CompressionLZ4, CompressionZstd, CompressionSnappy, CompressionGzip, CompressionNone))
	}
	if c.BatchMaxBytes < 1024 {
		errs = append(errs, fmt.Errorf("batch_max_bytes: %d: want at least 1024 (the topic's max.message.bytes at most)", c.BatchMaxBytes))
	}
	if c.MaxBufferedRecords < 1 {
		errs = append(errs, fmt.Errorf("max_buffered_records: %d: want at least 1", c.MaxBufferedRecords))
	}
	if (c.TLS.CertFile == "") != (c.TLS.KeyFile == "") {
		errs = append(errs, errors.New("tls: cert_file and key_file go together"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("kafka sink config: %w", err)
	}
	return nil
}

// commonOpts are the options every client of the sink shares: the
// producer, and the consumers that read checkpoints back.
func (c Config) commonOpts() ([]kgo.Opt, error) {
	opts := []kgo.Opt{
		kgo.SeedBrokers(c.Brokers...),
		kgo.ClientID(c.ClientID),
	}
	if c.TLS.enabled() {
		tc, err := c.TLS.config()
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.DialTLSConfig(tc))
	}
	switch strings.ToUpper(c.SASL.Mechanism) {
	case SASLPlain:
		opts = append(opts, kgo.SASL(plain.Auth{User: c.SASL.User, Pass: c.SASL.Password}.AsMechanism()))
	case SASLScramSHA256:
		opts = append(opts, kgo.SASL(scram.Auth{User: c.SASL.User, Pass: c.SASL.Password}.AsSha256Mechanism()))
	case SASLScramSHA512:
		opts = append(opts, kgo.SASL(scram.Auth{User: c.SASL.User, Pass: c.SASL.Password}.AsSha512Mechanism()))
	}
	return append(opts, c.clientOpts...), nil
}

// config builds the tls.Config; kgo fills ServerName per broker.
func (t TLS) config() (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: t.InsecureSkipVerify}
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, fmt.Errorf("tls.ca_file: %w", err)
		}
		tc.RootCAs = x509.NewCertPool()
		if !tc.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("tls.ca_file %s: no PEM certificate found", t.CAFile)
		}
	}
	if t.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("tls.cert_file/key_file: %w", err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}

// validTopicName applies Kafka's rule for topic names, so a bad template
// fails with the name it produced rather than a broker error code.
func validTopicName(name string) error {
	if name == "" || name == "." || name == ".." {
		return fmt.Errorf("invalid topic name %q", name)
	}
	if len(name) > 249 {
		return fmt.Errorf("topic name %q is longer than 249 characters", name)
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return fmt.Errorf("topic name %q: %q is not allowed (only ASCII letters, digits, '.', '_' and '-')", name, r)
		}
	}
	return nil
}
