package awssink

import (
	"context"
	"fmt"
	"net/url"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/icecdc/icecdc/internal/awsbody"
	"github.com/icecdc/icecdc/internal/redact"
)

// Conn is how a sink reaches AWS: the keys of the S3 storage's s3.*
// properties, under the sink's section. Left out, each comes from the
// SDK's default chain (AWS_REGION, AWS_ENDPOINT_URL, the environment's
// keys, a profile, a role).
type Conn struct {
	// Region, e.g. eu-west-1.
	Region string `yaml:"region"`
	// Endpoint replaces the service's endpoint (a VPC endpoint, a local
	// emulator): http:// or https://.
	Endpoint string `yaml:"endpoint"`
	// AccessKeyID and SecretAccessKey (and SessionToken with them) are
	// static credentials.
	AccessKeyID     string `yaml:"access_key_id"`
	SecretAccessKey string `yaml:"secret_access_key"`
	SessionToken    string `yaml:"session_token"`

	// HTTPClient sends the requests (default the SDK's); tests put a
	// fault injector in front of a server here.
	HTTPClient aws.HTTPClient `yaml:"-"`
}

// Check returns the section's problems, each naming its key; it never
// quotes a secret.
func (c Conn) Check() []error {
	var errs []error
	if c.Endpoint != "" {
		u, err := url.Parse(c.Endpoint)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("endpoint: %s: %s", redact.URL(c.Endpoint), redact.ParseReason(err)))
		case u.Scheme != "http" && u.Scheme != "https" || u.Host == "":
			errs = append(errs, fmt.Errorf("endpoint: %s: want an http:// or https:// URL", redact.URL(c.Endpoint)))
		}
	}
	switch {
	case c.SessionToken != "" && c.AccessKeyID == "":
		errs = append(errs, fmt.Errorf("session_token: requires access_key_id and secret_access_key"))
	case (c.AccessKeyID == "") != (c.SecretAccessKey == ""):
		errs = append(errs, fmt.Errorf("access_key_id: set together with secret_access_key"))
	}
	return errs
}

// Load returns the AWS configuration of c. The SDK's own retries are off:
// Deliver retries, entry by entry, and knows the batch.
func (c Conn) Load(ctx context.Context) (aws.Config, error) {
	opts := []func(*awsconfig.LoadOptions) error{
		awsconfig.WithRetryer(func() aws.Retryer { return aws.NopRetryer{} }),
	}
	if c.Region != "" {
		opts = append(opts, awsconfig.WithRegion(c.Region))
	}
	if c.Endpoint != "" {
		opts = append(opts, awsconfig.WithBaseEndpoint(c.Endpoint))
	}
	if c.AccessKeyID != "" {
		opts = append(opts, awsconfig.WithCredentialsProvider(
			credentials.NewStaticCredentialsProvider(c.AccessKeyID, c.SecretAccessKey, c.SessionToken)))
	}
	cfg, err := awsconfig.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return aws.Config{}, fmt.Errorf("aws configuration: %w", err)
	}
	// The SDK's client (with AWS_CA_BUNDLE's CAs, if any) or the test's,
	// sending bodies without their WriteTo.
	next := c.HTTPClient
	if next == nil {
		next = cfg.HTTPClient
	}
	if next == nil {
		next = awshttp.NewBuildableClient()
	}
	cfg.HTTPClient = awsbody.Client{Next: next}
	if cfg.Region == "" {
		return aws.Config{}, fmt.Errorf("aws configuration: no region: set region (or AWS_REGION)")
	}
	return cfg, nil
}

// Fingerprint is where c sends to, for the cluster's check.
func (c Conn) Fingerprint() []string {
	return []string{c.Region, redact.URL(c.Endpoint)}
}
