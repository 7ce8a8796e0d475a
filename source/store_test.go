package source

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	iceio "github.com/apache/iceberg-go/io"

	"github.com/icecdc/icecdc/internal/moto"
)

// unsetEnv removes k from the environment for the test's duration.
func unsetEnv(t *testing.T, k string) {
	t.Setenv(k, "")
	os.Unsetenv(k)
}

// openFails opens the table at metadata with props and wants an error
// holding every part, within a few seconds (no network wait).
func openFails(t *testing.T, metadata string, props map[string]string, parts ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	_, err := Open(ctx, Options{MetadataPath: metadata, Props: props})
	t.Logf("%s in %s: %v", metadata, time.Since(start).Round(time.Millisecond), err)
	if err == nil {
		t.Fatal("opened")
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Fatalf("error lacks %q: %v", p, err)
		}
	}
	if strings.Contains(err.Error(), "\n") {
		t.Fatalf("error spans lines: %q", err)
	}
}

func TestGCSWithoutCredentials(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home) // no gcloud application-default credentials
	t.Setenv("CLOUDSDK_CONFIG", home)
	unsetEnv(t, "GOOGLE_APPLICATION_CREDENTIALS")
	unsetEnv(t, "GCE_METADATA_HOST")
	openFails(t, "gs://lake/wh/t/metadata/v1.metadata.json", nil,
		"load metadata gs://lake/wh/t/metadata/v1.metadata.json: gcs bucket lake: no credentials: set gcs.oauth2.token, gcs.jsonkey or gcs.keypath",
		"GOOGLE_APPLICATION_CREDENTIALS")
}

func TestAzureWithoutCredentials(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("PATH", home) // no az or azd command
	for _, k := range []string{"AZURE_TENANT_ID", "AZURE_CLIENT_ID", "AZURE_CLIENT_SECRET", "AZURE_FEDERATED_TOKEN_FILE", "AZURE_USERNAME", "AZURE_TOKEN_CREDENTIALS", "IDENTITY_ENDPOINT", "MSI_ENDPOINT"} {
		unsetEnv(t, k)
	}
	loc := "abfs://lake@acct.dfs.core.windows.net/wh/t/metadata/v1.metadata.json"
	openFails(t, loc, nil, "load metadata "+loc, "azure container lake of acct.dfs.core.windows.net: no credentials: set adls.auth.shared-key.account.name")
	// A shared key needs both halves; iceberg-go names them.
	openFails(t, loc, map[string]string{"adls.auth.shared-key.account.name": "acct"},
		"load metadata "+loc, "adls.auth.shared-key.account.key")
}

func TestStoreProps(t *testing.T) {
	unsetEnv(t, "AWS_ENDPOINT_URL")
	t.Setenv("AWS_ENDPOINT_URL_S3", "http://minio:9000")
	p := storeProps(Options{Props: map[string]string{"s3.path-style-access": "false"}})
	if p["s3.force-virtual-addressing"] != "true" || p["s3.endpoint"] != "http://minio:9000" {
		t.Fatalf("props %v", p)
	}
	// Explicit properties win over the environment and the aliases.
	p = storeProps(Options{Props: map[string]string{"s3.path-style-access": "false", "s3.force-virtual-addressing": "false", "s3.endpoint": "http://x"}})
	if p["s3.force-virtual-addressing"] != "false" || p["s3.endpoint"] != "http://x" {
		t.Fatalf("props %v", p)
	}
	// A glue catalog's credentials and region serve S3 unless s3.* sets them.
	p = storeProps(Options{CatalogType: "glue", Props: map[string]string{
		"glue.access-key-id": "AK", "glue.secret-access-key": "SK", "glue.region": "eu-west-1"}})
	if p["s3.access-key-id"] != "AK" || p["s3.secret-access-key"] != "SK" || p["s3.region"] != "eu-west-1" {
		t.Fatalf("props %v", p)
	}
	p = storeProps(Options{CatalogType: "glue", Props: map[string]string{
		"glue.access-key-id": "AK", "glue.secret-access-key": "SK", "s3.access-key-id": "AK3", "s3.secret-access-key": "SK3"}})
	if p["s3.access-key-id"] != "AK3" || p["s3.secret-access-key"] != "SK3" {
		t.Fatalf("props %v", p)
	}
}

func TestSecretsAreHidden(t *testing.T) {
	t.Setenv("AWS_SECRET_ACCESS_KEY", "env-secret-Kq3")
	s := newSecrets(Options{
		CatalogURI: "postgres://icecdc:uri-pass-Wd9@db/catalog",
		Props: map[string]string{
			"s3.secret-access-key":                  "s3-secret-Pz7",
			"credential":                            "client-id-Mm1:client-secret-Jj4",
			"adls.sas-token.acct.blob.core.windows": "sv=2024&sig=sas-Yy5",
			"gcs.oauth2.token-expires-at":           "1767225600000",
			"s3.region":                             "us-east-1",
		},
	})
	msg := "failed: s3-secret-Pz7 client-id-Mm1:client-secret-Jj4 client-secret-Jj4 uri-pass-Wd9 sv=2024&sig=sas-Yy5 env-secret-Kq3 us-east-1 1767225600000"
	got := s.hide(msg)
	for _, secret := range []string{"s3-secret-Pz7", "client-secret-Jj4", "client-id-Mm1", "uri-pass-Wd9", "sas-Yy5", "env-secret-Kq3"} {
		if strings.Contains(got, secret) {
			t.Errorf("%q shows %q", got, secret)
		}
	}
	for _, kept := range []string{"us-east-1", "1767225600000"} {
		if !strings.Contains(got, kept) {
			t.Errorf("%q lost %q, which is no secret", got, kept)
		}
	}
}

// Secrets learned as tables load join the fixed ones; the oldest learned
// are forgotten past maxLearnedSecrets, the latest and the fixed never.
func TestSecretsLearned(t *testing.T) {
	s := newSecrets(Options{Props: map[string]string{"s3.secret-access-key": "fixed-secret-Ab1"}})
	s.learn("vended-key-Cd2", "vended-secret-Ef3", "", "abc") // "" and "abc" are too short to hide
	got := s.hide("fixed-secret-Ab1 vended-key-Cd2 vended-secret-Ef3 abc")
	if got != "**** **** **** abc" {
		t.Fatalf("hide: %q", got)
	}
	// A reload vends new credentials: the earlier ones stay hidden as long
	// as room is left.
	s.learn("vended-key-Gh4", "vended-secret-Ij5")
	if got := s.hide("vended-key-Cd2 vended-key-Gh4"); got != "**** ****" {
		t.Fatalf("after a reload: %q", got)
	}
	for i := range maxLearnedSecrets {
		s.learn(fmt.Sprintf("rotated-%04d", i))
	}
	if got := s.hide("vended-key-Cd2 rotated-0000 fixed-secret-Ab1"); got != "vended-key-Cd2 **** ****" {
		t.Fatalf("after %d more: %q", maxLearnedSecrets, got)
	}
	// One learn larger than the bound keeps all it learned.
	var many []string
	for i := range maxLearnedSecrets + 5 {
		many = append(many, fmt.Sprintf("many-%04d", i))
	}
	s.learn(many...)
	if got := s.hide("many-0000 rotated-0063"); got != "**** rotated-0063" {
		t.Fatalf("after a large learn: %q", got)
	}
	// A learned secret holding a fixed one is hidden whole.
	s.learn("xx-fixed-secret-Ab1-yy")
	if got := s.hide("token xx-fixed-secret-Ab1-yy"); got != "token ****" {
		t.Fatalf("nested: %q", got)
	}
}

// ioSecrets finds the credentials an IO was made with in its client: an
// S3 client's static key, an Azure container URL's SAS token.
func TestIOSecrets(t *testing.T) {
	moto.Isolate(t)
	ctx := context.Background()
	load := func(props map[string]string, loc string) []string {
		t.Helper()
		fsys, err := iceio.LoadFS(ctx, props, loc)
		if err != nil {
			t.Fatal(err)
		}
		return ioSecrets(ctx, fsys)
	}
	got := load(map[string]string{
		"s3.endpoint": "http://127.0.0.1:9", "s3.region": "us-east-1",
		"s3.access-key-id": "AKIAVENDED0000000001", "s3.secret-access-key": "vended-secret-Kl6", "s3.session-token": "vended-token-Mn7",
	}, "s3://lake/wh/t/metadata/v1.metadata.json")
	if want := []string{"AKIAVENDED0000000001", "vended-secret-Kl6", "vended-token-Mn7"}; !slices.Equal(got, want) {
		t.Errorf("s3: %q, want %q", got, want)
	}
	// No key: the SDK's chain would look for one (a request, for EC2's
	// metadata service); nothing is asked.
	if got := load(map[string]string{"s3.endpoint": "http://127.0.0.1:9", "s3.region": "us-east-1"}, "s3://lake/x"); len(got) != 0 {
		t.Errorf("s3 without a key: %q", got)
	}
	got = load(map[string]string{
		"adls.sas-token.acct.dfs.core.windows.net": "sv=2024-08-04&se=2030-01-01&sp=rl&sig=vended%2Bsig%3D",
	}, "abfs://lake@acct.dfs.core.windows.net/wh/t/metadata/v1.metadata.json")
	if !slices.Contains(got, "vended%2Bsig%3D") || !slices.Contains(got, "vended+sig=") {
		t.Errorf("azure: %q, want the SAS signature as sent and decoded", got)
	}
	if got := load(nil, "file:///tmp/x"); len(got) != 0 {
		t.Errorf("local files: %q", got)
	}
}

func TestCheckProps(t *testing.T) {
	if err := CheckProps(map[string]string{"s3.path-style-access": "true", "s3.request-timeout": "2.5", "s3.connect-timeout": "5s"}); err != nil {
		t.Fatal(err)
	}
	err := CheckProps(map[string]string{"s3.path-style-access": "on", "s3.request-timeout": "-1s"})
	if err == nil || !strings.Contains(err.Error(), "s3.path-style-access") || !strings.Contains(err.Error(), "s3.request-timeout") {
		t.Fatalf("got %v", err)
	}
}
