package source

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/io/gocloud/blobfs"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"
	"google.golang.org/api/googleapi"

	"github.com/icecdc/icecdc/internal/redact"
)

// storeError is an object store's error as one line: which store (bucket
// and endpoint) and what went wrong, in words that say what to change.
// The library's error stays reachable with errors.Is and errors.As.
type storeError struct {
	store, reason string
	err           error
	secrets       *secrets
}

func (e *storeError) Error() string { return e.secrets.hide(e.store + ": " + e.reason) }
func (e *storeError) Unwrap() error { return e.err }

// cause explains err, met reading name: the caller names the object.
func (s *store) cause(name string, err error) error {
	var se *storeError
	if errors.As(err, &se) {
		return err
	}
	reason, _ := classify(err, "s3")
	return &storeError{store: s.describe(name), reason: reason, err: err, secrets: s.secrets}
}

// explain is cause for any location: errors of local files are returned
// as they are, without secrets.
func (s *store) explain(name string, err error) error {
	if !isObjectStore(name) {
		return s.secrets.hideErr(err)
	}
	return s.cause(name, err)
}

// explainLoad explains the error of loading a table through a catalog,
// which read the metadata file with its own file IO: an object store's
// error names the file and the store instead of the catalog's wrapping.
// Other errors are the catalog's, without secrets.
func (s *store) explainLoad(ctx context.Context, o Options, err error) error {
	var pe *fs.PathError
	if !errors.As(err, &pe) || !isObjectStore(pe.Path) {
		return s.explainCatalog(o, err)
	}
	cause := s.cause(pe.Path, pe.Err)
	if errors.Is(err, fs.ErrNotExist) {
		if sctx, cerr := s.context(ctx, pe.Path); cerr == nil {
			if fsys, ferr := iceio.LoadFS(sctx, s.props, pe.Path); ferr == nil {
				cause = s.missing(ctx, fsys, pe.Path, pe.Err)
			}
		}
	}
	return fmt.Errorf("read metadata %s: %w", pe.Path, cause)
}

// explainCatalog explains an error of a rest or glue catalog's client
// that the store's words fit (connection, timeout, credentials, region,
// the service failing) as "glue catalog at ENDPOINT: …"; other errors are
// the catalog's own, without secrets. Every error of a hive catalog names
// the metastore (explainHive).
func (s *store) explainCatalog(o Options, err error) error {
	var se *storeError
	if errors.As(err, &se) {
		return s.secrets.hideErr(err)
	}
	if o.CatalogType == "hive" {
		return s.explainHive(o, err)
	}
	if o.CatalogType != "glue" && o.CatalogType != "rest" {
		return s.secrets.hideErr(err)
	}
	r, ok := reason(err, o.CatalogType)
	if !ok && errors.Is(err, rest.ErrOAuthError) {
		// iceberg-go's message is empty when the token endpoint's answer
		// is not an OAuth error document.
		r, ok = "the OAuth token request failed: check the credential (or token) property and oauth2-server-uri", true
	}
	if !ok {
		return s.secrets.hideErr(err)
	}
	where := o.CatalogType + " catalog"
	switch ep := o.CatalogURI; {
	case o.CatalogType == "glue" && s.props["glue.endpoint"] != "":
		where += " at " + redact.URL(s.props["glue.endpoint"])
	case o.CatalogType == "glue" && s.props["glue.region"] != "":
		where += " (region " + s.props["glue.region"] + ")"
	case o.CatalogType == "rest" && ep != "":
		where += " at " + redact.URL(ep)
	}
	return &storeError{store: where, reason: r, err: err, secrets: s.secrets}
}

// invalidMethod is Thrift's answer to a call the server does not know.
var invalidMethod = regexp.MustCompile(`Invalid method name: '([^']*)'`)

// explainHive explains an error of a hive catalog as "hive metastore at
// thrift://HOST:PORT: …", but for an error of a local file (the metadata
// file, which the error names). Two answers get words of their own: a
// metastore that does not know get_table (Hive 4.0.1 and later removed
// it) and a connection the metastore drops (which it does to a client
// without the SASL or framing it requires).
func (s *store) explainHive(o Options, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) && !isObjectStore(pe.Path) {
		return s.secrets.hideErr(err)
	}
	where := "hive metastore"
	uri := o.CatalogURI
	if uri == "" {
		uri = s.props["uri"]
	}
	if uri != "" {
		where += " at " + redact.URL(uri)
	}
	var r string
	var na *noAnswerError
	switch m := invalidMethod.FindStringSubmatch(err.Error()); {
	case m != nil && m[1] == "get_table_objects_by_name":
		r = "the metastore does not know the Thrift call get_table_objects_by_name that icecdc's change check makes (Hive 1.x to 3.x have it): use a Hive 3.x metastore"
	case m != nil:
		r = fmt.Sprintf("the metastore does not know the Thrift call %s that iceberg-go's Hive client makes: "+
			"Hive metastore 4.0.1 and later removed get_table; use a Hive 3.x metastore", m[1])
	case errors.Is(err, catalog.ErrNoSuchNamespace):
		r = "no such database"
	case errors.Is(err, catalog.ErrNoSuchTable):
		r = "no such table"
	case errors.As(err, &na):
		r = na.Error()
	default:
		var ok bool
		if r, ok = reason(err, "hive"); !ok {
			r = tidy(err.Error())
		} else if strings.HasPrefix(r, "the connection was dropped") {
			r += " (if it always is: icecdc's Hive client speaks plain binary Thrift, without SASL, Kerberos or framing)"
		}
	}
	return &storeError{store: where, reason: r, err: err, secrets: s.secrets}
}

// describe names the store holding name: its kind, bucket and endpoint.
func (s *store) describe(name string) string {
	scheme, _, _ := splitScheme(name)
	b := bucketOf(name)
	switch {
	case isS3(name):
		if ep := s.s3Endpoint(); ep != "" {
			return fmt.Sprintf("s3 bucket %s at %s", b, redact.URL(ep))
		}
		// An endpoint vended by a REST catalog is not known here.
		if r := s.s3Region(); r != "" {
			return fmt.Sprintf("s3 bucket %s (region %s)", b, r)
		}
		return "s3 bucket " + b
	case scheme == "gs":
		if ep := s.props[iceio.GCSEndpoint]; ep != "" {
			return fmt.Sprintf("gcs bucket %s at %s", b, redact.URL(ep))
		}
		return "gcs bucket " + b
	case isAzure(name):
		container, account, _ := strings.Cut(b, "@")
		if ep := s.azureEndpoint(account); ep != "" {
			return fmt.Sprintf("azure container %s of %s at %s", container, account, ep)
		}
		return fmt.Sprintf("azure container %s of %s", container, account)
	}
	return scheme + " store " + b
}

// azureEndpoint is the blob endpoint configured for the storage account
// of host (account.dfs.core.windows.net), as iceberg-go's azure IO picks
// it: the connection string's BlobEndpoint, else adls.endpoint; "" for
// Azure's own.
func (s *store) azureEndpoint(host string) string {
	account, _, _ := strings.Cut(host, ".")
	if cs := s.props[iceio.ADLSConnectionStringPrefix+account]; cs != "" {
		for _, kv := range strings.Split(cs, ";") {
			if k, v, ok := strings.Cut(kv, "="); ok && strings.EqualFold(strings.TrimSpace(k), "BlobEndpoint") {
				return strings.TrimSpace(v)
			}
		}
		return ""
	}
	if ep := s.props[iceio.ADLSEndpoint]; ep != "" {
		protocol := s.props[iceio.ADLSProtocol]
		if protocol == "" {
			protocol = "https"
		}
		return protocol + "://" + ep
	}
	return ""
}

func (s *store) s3Endpoint() string {
	if ep := s.props[iceio.S3EndpointURL]; ep != "" {
		return ep
	}
	return os.Getenv("AWS_S3_ENDPOINT") // iceberg-go's own fallback
}

func (s *store) s3Region() string {
	for _, r := range []string{s.props[iceio.S3Region], s.props[iceio.S3ClientRegion], os.Getenv("AWS_REGION"), os.Getenv("AWS_DEFAULT_REGION")} {
		if r != "" {
			return r
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.s3cfg != nil {
		return s.s3cfg.Region
	}
	return ""
}

// What to set, per store, when no credentials were found.
const (
	awsCredentialsHint = "set %[1]s.access-key-id and %[1]s.secret-access-key (catalog properties), " +
		"AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE"
	gcsCredentialsHint = "set gcs.oauth2.token, gcs.jsonkey or gcs.keypath (catalog properties) " +
		"or GOOGLE_APPLICATION_CREDENTIALS; gcs.no-auth=true reads a public bucket"
	azureCredentialsHint = "set adls.auth.shared-key.account.name and adls.auth.shared-key.account.key, " +
		"adls.sas-token.<host>, adls.connection-string.<account> or adls.auth.managed-identity.enabled=true " +
		"(catalog properties), or AZURE_TENANT_ID, AZURE_CLIENT_ID and AZURE_CLIENT_SECRET"
	azureHTTPCredentialsHint = "set adls.auth.shared-key.account.name and adls.auth.shared-key.account.key, " +
		"adls.sas-token.<host> or adls.connection-string.<account> (catalog properties): " +
		"an http endpoint is never sent an Azure identity's token"
)

// classify says in a few words what went wrong, from the most specific
// error the libraries report, and whether it knew the error (else it
// returns the library's message on one line). prefix is that of the
// properties that configure the AWS client: s3 or glue.
func classify(err error, prefix string) (string, bool) {
	r, ok := reason(err, prefix)
	if !ok {
		var pe *fs.PathError
		msg := err.Error()
		if errors.As(err, &pe) {
			msg = pe.Err.Error() // the caller names the file
		}
		r = tidy(loadFailed.ReplaceAllString(msg, ""))
	}
	return r, ok
}

func reason(err error, prefix string) (string, bool) {
	after := ""
	var mae *retry.MaxAttemptsError
	if errors.As(err, &mae) {
		after = fmt.Sprintf(" (after %d attempts)", mae.Attempt)
	}
	msg := err.Error()
	var (
		api  smithy.APIError
		az   *azcore.ResponseError
		gapi *googleapi.Error
		resp *awshttp.ResponseError
		rto  *awshttp.ResponseTimeoutError
		dns  *net.DNSError
		op   *net.OpError
	)
	switch {
	case strings.Contains(msg, "get identity: get credentials"), strings.Contains(msg, "failed to retrieve credentials"):
		return "no credentials: " + fmt.Sprintf(awsCredentialsHint, prefix), true
	case strings.Contains(msg, "could not find default credentials"):
		return "no credentials: " + gcsCredentialsHint, true
	case strings.Contains(msg, "DefaultAzureCredential"):
		return "no credentials: " + azureCredentialsHint, true
	case strings.Contains(msg, "authorized requests are not permitted for non-TLS"):
		// The Azure SDK sends an identity's token to https endpoints only.
		return "no credentials: " + azureHTTPCredentialsHint, true
	case strings.Contains(msg, "region is required"), strings.Contains(msg, "Invalid region"):
		return fmt.Sprintf("no region: set %s.region (catalog property) or AWS_REGION", prefix), true
	case errors.As(err, &api):
		return apiReason(api, resp, err) + after, true
	case errors.As(err, &az):
		return httpReason(az.StatusCode, az.ErrorCode), true
	case errors.As(err, &gapi):
		return httpReason(gapi.Code, ""), true
	case errors.As(err, &rto):
		return fmt.Sprintf("no answer within %s (%s)%s", rto.TimeoutDur, PropS3RequestTimeout, after), true
	case errors.As(err, &dns):
		return fmt.Sprintf("cannot resolve host %s%s", dns.Name, after), true
	case errors.As(err, &op) && op.Op == "dial":
		return fmt.Sprintf("cannot connect to %s: %v%s", op.Addr, op.Err, after), true
	case dialFailed.MatchString(msg): // a client that wrapped the error as text
		m := dialFailed.FindStringSubmatch(msg)
		return fmt.Sprintf("cannot connect to %s: %s%s", m[1], m[2], after), true
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.EPIPE), strings.Contains(msg, "connection reset"), strings.Contains(msg, "server closed"):
		return "the connection was dropped" + after, true
	case isTimeout(err):
		return "timed out" + after, true
	case errors.Is(err, fs.ErrNotExist):
		return "not found (no such object, or no such bucket)", true
	case errors.As(err, &resp) && resp.HTTPStatusCode() >= 500:
		return fmt.Sprintf("the service is failing: HTTP %d%s", resp.HTTPStatusCode(), after), true
	}
	return "", false
}

// httpReason explains an error answer of the GCS or Azure API by its HTTP
// status (and Azure's error code).
func httpReason(status int, code string) string {
	what := fmt.Sprintf("HTTP %d", status)
	if code != "" {
		what += " " + code
	}
	switch {
	case code == "BlobNotFound":
		return "no such object (BlobNotFound)"
	case code == "ContainerNotFound":
		return "no such container (ContainerNotFound)"
	case status == 404:
		return fmt.Sprintf("not found (%s: no such object, or no such bucket)", what)
	case status == 401 || code == "AuthenticationFailed":
		return fmt.Sprintf("the credentials were refused (%s): check the key or token", what)
	case status == 403:
		return fmt.Sprintf("access denied (%s): the credentials in use may not read it", what)
	case status == 408 || status == 429 || status >= 500:
		return "the service is failing: " + what
	}
	return what
}

// answeredNotFound reports whether an error the file IO calls
// fs.ErrNotExist came from a store's answer. An S3 request's error is one
// only with an API error (NoSuchKey, NotFound) in it: gocloud's s3blob
// also takes any failed S3 operation whose text holds "301" for a missing
// bucket, and a timeout or a dropped connection names ports and request
// ids (a proxy at 127.0.0.1:34301 made a stalled read "no such object").
func answeredNotFound(err error) bool {
	var op *smithy.OperationError
	var api smithy.APIError
	return !errors.As(err, &op) || errors.As(err, &api)
}

// missing tells a missing object from a missing bucket, which the file IO
// reports alike, by asking the store about the bucket (once, on failure).
func (s *store) missing(ctx context.Context, fsys iceio.IO, name string, err error) error {
	cause := s.cause(name, err)
	e, ok := cause.(*storeError)
	b, isBlob := fsys.(*blobfs.FileIO)
	if !ok || !isBlob || !errors.Is(err, fs.ErrNotExist) || !answeredNotFound(err) {
		return cause
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	switch exists, perr := b.IsAccessible(ctx); {
	case perr != nil:
	case exists:
		e.reason = "no such object"
	case isAzure(name):
		e.reason = "no such container"
	default:
		e.reason = "no such bucket"
	}
	return e
}

// apiReason explains an error answer of the S3 API by its code.
func apiReason(api smithy.APIError, resp *awshttp.ResponseError, err error) string {
	status := 0
	if errors.As(err, &resp) {
		status = resp.HTTPStatusCode()
	}
	code := api.ErrorCode()
	switch code {
	case "NoSuchKey":
		return "no such object (NoSuchKey)"
	case "NoSuchBucket":
		return "no such bucket (NoSuchBucket)"
	case "NotFound":
		return "not found (HTTP 404: no such object, or no such bucket)"
	case "AccessDenied", "Forbidden", "AllAccessDisabled", "AccountProblem":
		return fmt.Sprintf("access denied (%s): the credentials in use may not read it", code)
	case "InvalidAccessKeyId":
		return "the store does not know the access key (InvalidAccessKeyId)"
	case "SignatureDoesNotMatch":
		return "the secret key does not match the access key (SignatureDoesNotMatch)"
	case "ExpiredToken", "TokenRefreshRequired", "InvalidToken":
		return fmt.Sprintf("the session token was refused (%s)", code)
	case "PermanentRedirect", "AuthorizationHeaderMalformed", "IllegalLocationConstraintException":
		return fmt.Sprintf("the bucket is in another region (%s): set s3.region", code)
	}
	if status >= 500 || code == "SlowDown" || code == "Throttling" || code == "ThrottlingException" || code == "RequestTimeout" {
		return fmt.Sprintf("the store is failing or throttling: HTTP %d %s", status, code)
	}
	if status != 0 {
		return fmt.Sprintf("HTTP %d %s: %s", status, code, tidy(api.ErrorMessage()))
	}
	return fmt.Sprintf("%s: %s", code, tidy(api.ErrorMessage()))
}

func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}

// dialFailed is net's message for a connection that could not be made.
var dialFailed = regexp.MustCompile(`dial tcp (\S+): (connect: [^,;]+)`)

// loadFailed is iceberg-go's prefix to errors of making a file IO, which
// repeats the location the caller names.
var loadFailed = regexp.MustCompile(`failed to load metadata file at \S+: `)

// requestIDs are the parts of AWS errors that identify a request, which
// make a message long and no clearer.
var requestIDs = regexp.MustCompile(`,? ?(RequestID|HostID|request id|host id): [^,]*,?`)

// tidy makes a library's message one line without request ids.
func tidy(msg string) string {
	return strings.Join(strings.Fields(requestIDs.ReplaceAllString(msg, " ")), " ")
}

func isEOF(err error) bool { return err == io.EOF }

// secrets are the values an error message must never show. Fixed when the
// store is made: the credentials of the catalog properties, the catalog
// URI's password and the credentials of the environment. Learned as the
// table loads (see learn): the credentials of its metadata properties and
// those its file IO is made with, which a REST catalog vends with the
// table (loadTable's config, its storage-credentials) and may change at
// every load.
type secrets struct {
	fixed []string

	mu      sync.Mutex
	learned []string // oldest first, at most maxLearnedSecrets beyond the last learn's
}

// maxLearnedSecrets bounds the learned values a store keeps: those of the
// last load, and as many of earlier loads as fit (an error made before a
// reload may be shown after it), so that a daemon given new credentials
// with every load does not keep them all.
const maxLearnedSecrets = 64

// secretKeys are the parts of property names that hold credentials.
var secretKeys = []string{
	"secret", "password", "credential", "token", "sas-token", "connection-string",
	"jsonkey", "account.key", "access-key-id", "private-key", "api-key", "apikey",
}

func isSecretKey(k string) bool {
	k = strings.ToLower(k)
	if strings.Contains(k, "expires") {
		return false
	}
	for _, s := range secretKeys {
		if strings.Contains(k, s) {
			return true
		}
	}
	return false
}

// isSecretValue reports whether v is worth hiding: shorter values would
// hide unrelated words.
func isSecretValue(v string) bool { return len(v) >= 4 }

// propSecrets returns the values of the properties that hold credentials.
func propSecrets(props map[string]string) []string {
	var out []string
	for k, v := range props {
		if isSecretKey(k) {
			out = append(out, v)
			if id, secret, ok := strings.Cut(v, ":"); ok { // REST credential=client_id:client_secret
				out = append(out, id, secret)
			}
		}
	}
	return out
}

func newSecrets(o Options) *secrets {
	s := &secrets{}
	add := func(v string) {
		if isSecretValue(v) {
			s.fixed = append(s.fixed, v)
		}
	}
	for _, v := range propSecrets(o.Props) {
		add(v)
	}
	for _, v := range urlSecrets(o) {
		add(v)
	}
	for _, uri := range []string{o.CatalogURI, o.Props["uri"]} {
		if u, err := url.Parse(uri); err == nil && u.User != nil {
			if pw, ok := u.User.Password(); ok {
				add(pw)
				add(url.QueryEscape(pw))
			}
		}
	}
	for _, k := range []string{"AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_ACCESS_KEY_ID", "AZURE_CLIENT_SECRET"} {
		add(os.Getenv(k))
	}
	return s
}

// learn adds values to the secrets, as the latest learned: older learned
// values beyond maxLearnedSecrets are forgotten, the fixed ones never.
func (s *secrets) learn(values ...string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	latest := map[string]bool{}
	for _, v := range values {
		if !isSecretValue(v) || latest[v] || slices.Contains(s.fixed, v) {
			continue
		}
		latest[v] = true
		s.learned = slices.DeleteFunc(s.learned, func(l string) bool { return l == v })
		s.learned = append(s.learned, v)
	}
	if excess := len(s.learned) - max(maxLearnedSecrets, len(latest)); excess > 0 {
		s.learned = slices.Delete(s.learned, 0, excess)
	}
}

// hide replaces every secret in msg, the longest first: a secret holding
// another (a vended token holding a catalog's client id) is hidden whole;
// and the userinfo of every URL, which a library may quote from a URL it
// was given or made.
func (s *secrets) hide(msg string) string {
	msg = redact.Text(msg)
	if s == nil {
		return msg
	}
	s.mu.Lock()
	all := slices.Concat(s.fixed, s.learned)
	s.mu.Unlock()
	slices.SortStableFunc(all, func(a, b string) int { return len(b) - len(a) })
	for _, v := range all {
		msg = strings.ReplaceAll(msg, v, "****")
	}
	return msg
}

// hideErr returns err, or when its message shows a secret, an error with
// the same chain and the secret replaced.
func (s *secrets) hideErr(err error) error {
	if err == nil {
		return nil
	}
	if msg := s.hide(err.Error()); msg != err.Error() {
		return &hiddenError{msg: msg, err: err}
	}
	return err
}

type hiddenError struct {
	msg string
	err error
}

func (e *hiddenError) Error() string { return e.msg }
func (e *hiddenError) Unwrap() error { return e.err }
