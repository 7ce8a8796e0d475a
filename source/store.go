package source

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"cloud.google.com/go/storage"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/apache/iceberg-go/catalog/hive"
	iceio "github.com/apache/iceberg-go/io"
	_ "github.com/apache/iceberg-go/io/gocloud/azure" // registers abfs, abfss, wasb, wasbs
	"github.com/apache/iceberg-go/io/gocloud/blobfs"
	_ "github.com/apache/iceberg-go/io/gocloud/gcs"   // registers gs
	s3io "github.com/apache/iceberg-go/io/gocloud/s3" // registers s3, s3a, s3n
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/utils"
	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/logging"
	"github.com/googleapis/gax-go/v2"

	"github.com/icecdc/icecdc/internal/redact"
)

// Object stores: iceberg-go reads s3://, gs:// and abfs:// files through
// gocloud, registered by the imports above. Around it icecdc adds the
// property names other Iceberg implementations use, the standard AWS
// environment for the endpoint, bounded retries and a read timeout for
// S3, and errors that say in one line which store failed and why, with no
// secret in them.

// Properties icecdc reads besides iceberg-go's own.
const (
	// PropS3PathStyle is Iceberg Java's and PyIceberg's name for path-style
	// S3 requests; iceberg-go's is s3.force-virtual-addressing, inverted.
	PropS3PathStyle = "s3.path-style-access"
	// PropS3RequestTimeout is how long an S3 connection may stay silent
	// while a response is awaited or read (seconds, or a Go duration; as
	// PyIceberg names it). Default 60s.
	PropS3RequestTimeout = "s3.request-timeout"
)

const (
	// defaultS3Attempts is how many times one S3 request is tried: the AWS
	// SDK's standard retryer retries 5xx answers, throttling, timeouts and
	// dropped connections with exponential backoff and jitter. The
	// environment's AWS_MAX_ATTEMPTS overrides it.
	defaultS3Attempts    = 5
	defaultS3ReadTimeout = 60 * time.Second

	// storeAttempts is how many times one GCS or Azure request is tried,
	// with exponential backoff from storeRetryDelay up to
	// storeMaxRetryDelay: the Azure SDK's default is 4 tries with up to a
	// minute between them, and the GCS client's is to retry without end,
	// so that a wrong endpoint would hang rather than fail.
	storeAttempts      = 5
	storeRetryDelay    = 250 * time.Millisecond
	storeMaxRetryDelay = 5 * time.Second
)

// CheckProps reports catalog properties icecdc would misread: each error
// names the property.
func CheckProps(props map[string]string) error {
	var errs []error
	if err := checkURLProps(props); err != nil {
		errs = append(errs, err)
	}
	if v, ok := props[PropS3PathStyle]; ok {
		if _, err := strconv.ParseBool(v); err != nil {
			errs = append(errs, fmt.Errorf("%s: %q: want true or false", PropS3PathStyle, v))
		}
	}
	for _, k := range []string{PropS3RequestTimeout, iceio.S3ConnectTimeout} {
		if v, ok := props[k]; ok {
			if _, err := parseSeconds(v); err != nil {
				errs = append(errs, fmt.Errorf("%s: %q: want seconds (60) or a duration (1m)", k, v))
			}
		}
	}
	// The hive catalog's lock settings, which iceberg-go ignores when it
	// cannot read them.
	ms := map[string]int{}
	for _, k := range []string{hive.LockCheckMinWaitMs, hive.LockCheckMaxWaitMs, hive.LockCheckRetries} {
		if v, ok := props[k]; ok {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				unit := " of milliseconds"
				if k == hive.LockCheckRetries {
					unit = ""
				}
				errs = append(errs, fmt.Errorf("%s: %q: want a positive whole number%s", k, v, unit))
				continue
			}
			ms[k] = n
		}
	}
	if lo, hi := ms[hive.LockCheckMinWaitMs], ms[hive.LockCheckMaxWaitMs]; lo > 0 || hi > 0 {
		lo = cmp.Or(lo, int(hive.DefaultLockCheckMinWaitTime.Milliseconds()))
		hi = cmp.Or(hi, int(hive.DefaultLockCheckMaxWaitTime.Milliseconds()))
		if lo >= hi {
			errs = append(errs, fmt.Errorf("%s (%d) must be less than %s (%d, default %d)", hive.LockCheckMinWaitMs, lo,
				hive.LockCheckMaxWaitMs, hi, hive.DefaultLockCheckMaxWaitTime.Milliseconds()))
		}
	}
	return errors.Join(errs...)
}

func parseSeconds(v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil {
		s, ferr := strconv.ParseFloat(v, 64)
		if ferr != nil {
			return 0, err
		}
		d = time.Duration(s * float64(time.Second))
	}
	if d <= 0 {
		return 0, errors.New("not positive")
	}
	return d, nil
}

// storeProps returns the catalog properties as the catalog and the file IO
// are given them: s3.path-style-access becomes iceberg-go's
// s3.force-virtual-addressing; the standard AWS_ENDPOINT_URL_S3 or
// AWS_ENDPOINT_URL stands for an unset s3.endpoint (iceberg-go then makes
// path-style requests, as for any configured endpoint); and a Glue
// catalog's credentials and region are also S3's unless s3.* sets them,
// as Iceberg Java's Glue catalog shares one AWS client configuration.
func storeProps(o Options) map[string]string {
	p := maps.Clone(o.Props)
	if p == nil {
		p = map[string]string{}
	}
	if v, ok := p[PropS3PathStyle]; ok {
		if b, err := strconv.ParseBool(v); err == nil {
			if _, set := p[iceio.S3ForceVirtualAddressing]; !set {
				p[iceio.S3ForceVirtualAddressing] = strconv.FormatBool(!b)
			}
		}
	}
	if _, ok := p[iceio.S3EndpointURL]; !ok {
		for _, k := range []string{"AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"} {
			if v := os.Getenv(k); v != "" {
				p[iceio.S3EndpointURL] = v
				break
			}
		}
	}
	if o.CatalogType == "glue" {
		if p[iceio.S3AccessKeyID] == "" && p["glue.access-key-id"] != "" {
			p[iceio.S3AccessKeyID] = p["glue.access-key-id"]
			p[iceio.S3SecretAccessKey] = p["glue.secret-access-key"]
			p[iceio.S3SessionToken] = p["glue.session-token"]
		}
		if p[iceio.S3Region] == "" && p["glue.region"] != "" {
			p[iceio.S3Region] = p["glue.region"]
		}
	}
	return p
}

// store is how one table's files are reached: its properties, the AWS
// configuration of its S3 client (made once), and the secrets its errors
// must not show.
type store struct {
	props   map[string]string
	secrets *secrets
	log     *slog.Logger // the AWS SDK's warnings; nil: slog's default

	mu    sync.Mutex
	s3cfg *aws.Config
}

func newStore(o Options) *store {
	return &store{props: storeProps(o), secrets: newSecrets(o), log: o.Log}
}

// context returns ctx carrying the AWS configuration iceberg-go's S3 IO
// starts from (it still applies s3.region and s3.access-key-id, from the
// catalog or vended by a REST catalog, over it): iceberg-go's own reading
// of the properties and the environment, plus bounded retries and a read
// timeout. Only S3 locations need it.
//
// For Azure it carries the retry options every request made with it
// follows (the Azure SDK reads them from a request's context, and
// iceberg-go's azure IO makes its requests with the context it was made
// with).
func (s *store) context(ctx context.Context, location string) (context.Context, error) {
	if isAzure(location) {
		return policy.WithRetryOptions(ctx, policy.RetryOptions{
			MaxRetries: storeAttempts - 1, RetryDelay: storeRetryDelay, MaxRetryDelay: storeMaxRetryDelay,
		}), nil
	}
	if !isS3(location) {
		return ctx, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.s3cfg == nil {
		if err := checkURLProps(s.props); err != nil {
			return nil, err // before iceberg-go quotes the URL whole
		}
		cfg, err := s3io.ParseAWSConfig(ctx, s.props)
		if err != nil {
			return nil, s.explain(location, err)
		}
		if cfg.RetryMaxAttempts == 0 {
			cfg.RetryMaxAttempts = defaultS3Attempts
		}
		timeout := defaultS3ReadTimeout
		if v, ok := s.props[PropS3RequestTimeout]; ok {
			if timeout, err = parseSeconds(v); err != nil {
				return nil, fmt.Errorf("%s %q: %w", PropS3RequestTimeout, v, err)
			}
		}
		hc, ok := cfg.HTTPClient.(*awshttp.BuildableClient)
		if !ok || hc == nil {
			hc = awshttp.NewBuildableClient()
		}
		// Many reads of one commit run at once: keep their connections.
		cfg.HTTPClient = hc.WithReadTimeout(timeout).WithTransportOptions(func(t *http.Transport) {
			t.MaxIdleConns, t.MaxIdleConnsPerHost = 256, 256
		})
		// The SDK's default logger prints plain lines to stderr (e.g. "WARN
		// Response has no supported checksum" for objects stored without
		// one), which breaks the daemon's JSON log; its messages go to the
		// source's logger instead, through the store's secrets.
		cfg.Logger = s.awsLogger()
		s.s3cfg = cfg
	}
	return utils.WithAwsConfig(ctx, s.s3cfg), nil
}

// fs wraps a table's file IO function: S3 clients get the store's
// configuration, errors of object stores say which store and why, and the
// credentials the IO was made with join the secrets those errors hide.
// iceberg-go's local IO is replaced by localIO, which opens only regular
// files and bounds every call in time.
func (s *store) fs(location string, fsF table.FSysF) table.FSysF {
	return func(ctx context.Context) (iceio.IO, error) {
		ctx, err := s.context(ctx, location)
		if err != nil {
			return nil, err
		}
		fsys, err := fsF(ctx)
		if err != nil {
			return nil, s.explain(location, err)
		}
		switch fsys.(type) {
		case iceio.LocalFS, *iceio.LocalFS:
			return localIO{}, nil
		case *storeIO, localIO:
			return fsys, nil
		}
		if !isObjectStore(location) {
			return fsys, nil
		}
		s.secrets.learn(ioSecrets(ctx, fsys)...)
		if err := s.checkEndpoint(location, fsys); err != nil {
			return nil, err
		}
		boundGCSRetries(fsys)
		return &storeIO{inner: fsys, s: s, ctx: ctx}, nil
	}
}

// loaded learns the secrets of a table just loaded: the credentials among
// its metadata properties, which iceberg-go's REST catalog merges into the
// table's file IO properties (and which are credentials wherever they are
// written). Those a REST catalog vends in its answer are learned from the
// IO made with them (see ioSecrets), when the table's files are first read.
func (s *store) loaded(tbl *table.Table) {
	s.secrets.learn(propSecrets(tbl.Properties())...)
}

// ioSecrets returns the credentials an object store's file IO was made
// with, as its client holds them: the properties the IO was made from
// (the catalog's merged with what a REST catalog vends with the table:
// loadTable's config, its storage-credentials) are not reachable through
// iceberg-go, the client they configured is.
//
//   - S3: the static key of the client (s3.access-key-id,
//     s3.secret-access-key, s3.session-token, or a profile's static key);
//     credentials from a provider that fetches them (SSO, a web identity,
//     EC2's metadata service) are not asked for: that is a request.
//   - Azure: the SAS token in the container's URL (adls.sas-token.<host>,
//     a connection string's SharedAccessSignature), whole and its
//     signature, the part that is secret, as a URL carries it and decoded.
//   - GCS: nothing. The client keeps its token source to itself; a token
//     (gcs.oauth2.token) travels only in an Authorization header, which no
//     error shows.
//
// An Azure shared key (adls.auth.shared-key.account.key) stays inside its
// client too: it signs requests and travels in none.
func ioSecrets(ctx context.Context, fsys iceio.IO) []string {
	b, ok := fsys.(*blobfs.FileIO)
	if !ok {
		return nil
	}
	var out []string
	var s3c *s3.Client
	if b.Bucket.As(&s3c) && s3c != nil {
		creds := s3c.Options().Credentials
		if creds != nil && aws.IsCredentialsProvider(creds, credentials.StaticCredentialsProvider{}) {
			if v, err := creds.Retrieve(ctx); err == nil {
				out = append(out, v.AccessKeyID, v.SecretAccessKey, v.SessionToken)
			}
		}
	}
	var az *container.Client
	if b.Bucket.As(&az) && az != nil {
		if u, err := url.Parse(az.URL()); err == nil && u.RawQuery != "" {
			out = append(out, u.RawQuery)
			for _, kv := range strings.Split(u.RawQuery, "&") {
				if k, v, _ := strings.Cut(kv, "="); k == "sig" {
					out = append(out, v)
					if dec, err := url.QueryUnescape(v); err == nil {
						out = append(out, dec)
					}
				}
			}
		}
	}
	return out
}

// checkEndpoint refuses an S3 file IO that would sign requests to an
// endpoint the operator did not give with the operator's own credentials:
// a REST catalog's loadTable config (or the table's properties) may name
// s3.endpoint, which iceberg-go merges into the IO's properties, and a
// catalog vending an endpoint of its choosing without keys would have
// every request signed for it with the keys icecdc was given. An
// endpoint given with its own keys (vended credentials) is used.
func (s *store) checkEndpoint(location string, fsys iceio.IO) error {
	b, ok := fsys.(*blobfs.FileIO)
	var c *s3.Client
	if !ok || !b.Bucket.As(&c) || c == nil {
		return nil
	}
	opts := c.Options()
	ep := strings.TrimRight(aws.ToString(opts.BaseEndpoint), "/")
	if ep == "" || ep == strings.TrimRight(s.s3Endpoint(), "/") {
		return nil
	}
	if vended := s.vendedKey(opts.Credentials); vended {
		return nil
	}
	return &storeError{store: s.describe(location), secrets: s.secrets, err: errForeignEndpoint,
		reason: fmt.Sprintf("the catalog gives the endpoint %s for the table's files without credentials for it: "+
			"icecdc signs requests to an endpoint it was not given only with credentials given with that endpoint "+
			"(set s3.endpoint to it to trust it with your own)", redact.URL(ep))}
}

// vendedKey reports whether creds are a static key that is not the
// operator's: iceberg-go makes one of the properties it is given, which
// hold the operator's own (s3.access-key-id) unless the catalog vended
// others; any other provider (a profile, the environment, a web identity)
// is the operator's.
func (s *store) vendedKey(creds aws.CredentialsProvider) bool {
	if creds == nil || !aws.IsCredentialsProvider(creds, credentials.StaticCredentialsProvider{}) {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second) // static: no request
	defer cancel()
	v, err := creds.Retrieve(ctx)
	if err != nil || v.AccessKeyID == "" {
		return false
	}
	if v.AccessKeyID == s.props[iceio.S3AccessKeyID] || v.AccessKeyID == os.Getenv("AWS_ACCESS_KEY_ID") {
		return false
	}
	s.mu.Lock()
	cfg := s.s3cfg
	s.mu.Unlock()
	if cfg != nil && cfg.Credentials != nil && aws.IsCredentialsProvider(cfg.Credentials, credentials.StaticCredentialsProvider{}) {
		if own, err := cfg.Credentials.Retrieve(ctx); err == nil && own.AccessKeyID == v.AccessKeyID {
			return false
		}
	}
	return true
}

// errForeignEndpoint is checkEndpoint's refusal.
var errForeignEndpoint = errors.New("endpoint vended without credentials")

// boundGCSRetries makes a GCS file IO try each request storeAttempts
// times: iceberg-go makes its client with the library's default, which
// retries a refused connection or a 503 until the context ends.
func boundGCSRetries(fsys iceio.IO) {
	b, ok := fsys.(*blobfs.FileIO)
	if !ok {
		return
	}
	var c *storage.Client
	if b.Bucket.As(&c) && c != nil {
		c.SetRetry(storage.WithMaxAttempts(storeAttempts),
			storage.WithBackoff(gax.Backoff{Initial: storeRetryDelay, Max: storeMaxRetryDelay, Multiplier: 2}))
	}
}

// storeIO is an object store's file IO whose errors explain themselves.
type storeIO struct {
	inner iceio.IO
	s     *store
	ctx   context.Context // the IO's own: the one it was made with
}

var _ iceio.IO = (*storeIO)(nil)

// Open returns an error that callers name the file of (as decodeError and
// fileError do): an *ioError, so that it is told from a decoder's, that
// says which store and why, and still matches errors.Is(err,
// fs.ErrNotExist) for a missing object.
func (o *storeIO) Open(name string) (iceio.File, error) {
	f, err := o.inner.Open(name)
	if err != nil {
		return nil, &ioError{o.s.missing(o.ctx, o.inner, name, err)}
	}
	return storeFile{File: f, name: name, s: o.s}, nil
}

func (o *storeIO) Remove(name string) error {
	if err := o.inner.Remove(name); err != nil {
		return &fs.PathError{Op: "remove", Path: name, Err: o.s.cause(name, err)}
	}
	return nil
}

// storeFile explains the errors of reads, which are requests of their own
// (a ranged GET per ReadAt).
type storeFile struct {
	iceio.File
	name string
	s    *store
}

func (f storeFile) Read(p []byte) (int, error) {
	n, err := f.File.Read(p)
	return n, f.explain(err)
}

func (f storeFile) ReadAt(p []byte, off int64) (int, error) {
	n, err := f.File.ReadAt(p, off)
	return n, f.explain(err)
}

func (f storeFile) explain(err error) error {
	if err == nil || isEOF(err) {
		return err // io.EOF must stay itself: readers compare with ==
	}
	return &fs.PathError{Op: "read", Path: f.name, Err: f.s.cause(f.name, err)}
}

// isObjectStore reports whether location is read through gocloud.
func isObjectStore(location string) bool {
	scheme, _, ok := splitScheme(location)
	return ok && scheme != "file"
}

func isS3(location string) bool {
	scheme, _, ok := splitScheme(location)
	return ok && (scheme == "s3" || scheme == "s3a" || scheme == "s3n")
}

func isAzure(location string) bool {
	scheme, _, ok := splitScheme(location)
	return ok && (strings.HasPrefix(scheme, "abfs") || strings.HasPrefix(scheme, "wasb"))
}

// bucketOf returns the bucket (or container@account) of an object URI.
func bucketOf(location string) string {
	u, err := url.Parse(location)
	if err != nil {
		return ""
	}
	if u.User != nil { // abfs://container@account.dfs.core.windows.net/...
		return u.User.Username() + "@" + u.Host
	}
	return u.Host
}

// awsLogger sends the AWS SDK's log lines to the source's logger: warnings
// at WARN, anything else at DEBUG.
func (s *store) awsLogger() logging.Logger {
	return logging.LoggerFunc(func(c logging.Classification, format string, v ...any) {
		log := s.log
		if log == nil {
			log = slog.Default()
		}
		level := slog.LevelDebug
		if c == logging.Warn {
			level = slog.LevelWarn
		}
		log.Log(context.Background(), level, "aws sdk: "+s.secrets.hide(fmt.Sprintf(format, v...)))
	})
}
