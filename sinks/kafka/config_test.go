package kafka

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/sinks/sinktest"
	"github.com/twmb/franz-go/pkg/kfake"
)

func TestConfigDefaults(t *testing.T) {
	c := Config{Brokers: []string{"b:9092"}, Pipeline: "shop-cdc"}.withDefaults()
	if c.Topic != "icecdc.{namespace}.{table}" || c.Delivery != AtLeastOnce || c.ClientID != "icecdc" ||
		c.TransactionalID != "icecdc-shop-cdc" || c.CheckpointTopic != "icecdc.checkpoints" ||
		c.TopicPartitions != -1 || c.TopicReplicationFactor != -1 || c.Logger == nil ||
		c.Compression != "snappy" || c.Linger != 5*time.Millisecond || c.BatchMaxBytes != 1000012 || c.MaxBufferedRecords != 100_000 {
		t.Fatalf("defaults: %+v", c)
	}
	if err := c.validate(); err != nil {
		t.Fatal(err)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string // in the error; "" for valid
	}{
		{"ok", func(*Config) {}, ""},
		{"all placeholders", func(c *Config) { c.Topic = "{pipeline}.{catalog}.{namespace}.{table}" }, ""},
		{"no brokers", func(c *Config) { c.Brokers = nil }, "brokers"},
		{"bad delivery", func(c *Config) { c.Delivery = "at-most-once" }, "delivery"},
		{"exactly once needs a pipeline", func(c *Config) { c.Delivery = ExactlyOnce; c.Pipeline = "" }, "pipeline"},
		{"unknown placeholder", func(c *Config) { c.Topic = "icecdc.{schema}.{table}" }, "{schema}"},
		{"pipeline placeholder without a name", func(c *Config) { c.Topic = "{pipeline}.{table}"; c.Pipeline = "" }, "{pipeline}"},
		{"bad checkpoint topic", func(c *Config) { c.Delivery = ExactlyOnce; c.CheckpointTopic = "check points" }, "checkpoint_topic"},
		{"bad sasl", func(c *Config) { c.SASL.Mechanism = "GSSAPI" }, "sasl.mechanism"},
		{"lowercase sasl", func(c *Config) { c.SASL.Mechanism = "scram-sha-512" }, ""},
		{"cert without key", func(c *Config) { c.TLS.CertFile = "c.pem" }, "tls"},
		{"zstd", func(c *Config) { c.Compression = "ZSTD" }, ""},
		{"bad compression", func(c *Config) { c.Compression = "brotli" }, `compression: "brotli"`},
		{"tiny batch", func(c *Config) { c.BatchMaxBytes = 100 }, "batch_max_bytes"},
		{"no buffer", func(c *Config) { c.MaxBufferedRecords = -1 }, "max_buffered_records"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Config{Brokers: []string{"b:9092"}, Pipeline: "p"}
			tc.edit(&c)
			_, err := New(c)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want one naming %q", err, tc.want)
			}
		})
	}
}

func TestSinkTypes(t *testing.T) {
	alo, err := New(Config{Brokers: []string{"b:9092"}})
	if err != nil {
		t.Fatal(err)
	}
	// A CheckpointSink's Restore is the truth on start: an at-least-once
	// sink must not look like one.
	if _, ok := alo.(cdc.CheckpointSink); ok {
		t.Fatal("an at-least-once sink implements cdc.CheckpointSink")
	}
	eos, err := New(Config{Brokers: []string{"b:9092"}, Pipeline: "p", Delivery: ExactlyOnce})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := eos.(cdc.CheckpointSink); !ok {
		t.Fatal("an exactly-once sink does not implement cdc.CheckpointSink")
	}
}

func TestSecretsStayOut(t *testing.T) {
	c := Config{Brokers: []string{"b"}, SASL: SASL{Mechanism: "PLAIN", User: "icecdc", Password: "hunter2"}}
	for _, s := range []string{fmt.Sprintf("%v", c), fmt.Sprintf("%+v", c), c.SASL.LogValue().String()} {
		if strings.Contains(s, "hunter2") {
			t.Fatalf("password printed: %s", s)
		}
	}
}

// TestSASL writes through a cluster that requires each mechanism.
func TestSASL(t *testing.T) {
	for _, mech := range []string{SASLPlain, SASLScramSHA256, SASLScramSHA512} {
		t.Run(mech, func(t *testing.T) {
			t.Parallel()
			ctx := testContext(t)
			c := newCluster(t, kfake.EnableSASL(), kfake.Superuser(mech, "icecdc", "s3cret"))
			cfg := testConfig(c)
			cfg.SASL = SASL{Mechanism: mech, User: "icecdc", Password: "s3cret"}
			st := sinktest.NewStream("shop", "orders")
			b := st.Snapshot(20, 0)[0]
			if err := newSink(t, cfg).Write(ctx, b); err != nil {
				t.Fatalf("Write: %v", err)
			}
			checkRead(t, ctx, newReader(c, cfg), b.Messages)

			// A real broker answers SASL_AUTHENTICATION_FAILED, which
			// is permanent (TestClassify); kfake just closes the
			// connection, which looks like a network failure.
			cfg.SASL.Password = "wrong"
			if err := newSink(t, cfg).Write(ctx, st.Snapshot(20, 0)[0]); err == nil {
				t.Fatal("Write with a wrong password succeeded")
			}
		})
	}
}

// TestTLS writes through a cluster that only speaks TLS, trusting its CA
// from a file.
func TestTLS(t *testing.T) {
	ctx := testContext(t)
	dir := t.TempDir()
	serverCfg := selfSigned(t, dir)
	c := newCluster(t, kfake.TLS(serverCfg))
	cfg := testConfig(c)
	cfg.TLS = TLS{CAFile: filepath.Join(dir, "ca.pem")}
	b := sinktest.NewStream("shop", "orders").Snapshot(20, 0)[0]
	if err := newSink(t, cfg).Write(ctx, b); err != nil {
		t.Fatalf("Write: %v", err)
	}
	checkRead(t, ctx, newReader(c, cfg), b.Messages)

	if _, err := (TLS{CAFile: filepath.Join(dir, "missing.pem")}).config(); err == nil {
		t.Fatal("a missing CA file is accepted")
	}
}

// selfSigned makes a certificate for 127.0.0.1 that is its own CA, writes
// it to dir/ca.pem and returns the server side of it.
func selfSigned(t *testing.T, dir string) *tls.Config {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "kfake"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	if err := os.WriteFile(filepath.Join(dir, "ca.pem"), certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(certPEM, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}))
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
}
