package source

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	icebergglue "github.com/apache/iceberg-go/catalog/glue"
	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/glue"
	gluetypes "github.com/aws/aws-sdk-go-v2/service/glue/types"

	"github.com/icecdc/icecdc/internal/awsbody"
	"github.com/icecdc/icecdc/internal/redact"
)

// glueCatalog is iceberg-go's glue catalog with a Glue client of the same
// AWS configuration: iceberg-go has no call that reads many tables'
// metadata locations (its ListTables returns names, its LoadTable is one
// GetTable per table), so the change check pages GetTables itself, whose
// tables carry their metadata_location parameter.
type glueCatalog struct {
	*icebergglue.Catalog
	client    *glue.Client
	catalogID *string
	where     string // "glue catalog at ENDPOINT" or "(region R)", for errors
}

// glueMaxPages bounds the GetTables pages one change check reads of a
// database: 1,000 pages of 100 are 100,000 tables, past any real
// database; a server that keeps sending a NextToken is cut off there.
var glueMaxPages = 1000

// glueTablesPerPage is the page size the check asks for.
const glueTablesPerPage = 100

// openGlue opens a glue catalog as iceberg-go's registry does, with every
// answer read through icecdc's bound (limit bytes, see boundedBody), and
// keeps a Glue client of the same configuration for the change check.
func openGlue(ctx context.Context, props iceberg.Properties, limit int64) (catalog.Catalog, error) {
	cfg, err := glueAWSConfig(ctx, props)
	if err != nil {
		return nil, err
	}
	if limit <= 0 {
		limit = DefaultMaxResponseBytes
	}
	next := cfg.HTTPClient
	if next == nil {
		next = awshttp.NewBuildableClient()
	}
	cfg.HTTPClient = &boundedAWSClient{next: next, limit: limit}
	props = maps.Clone(props)
	c, err := icebergglue.NewCatalog(icebergglue.WithAwsConfig(cfg), icebergglue.WithAwsProperties(icebergglue.AwsProperties(props)))
	if err != nil {
		return nil, err
	}
	gc := &glueCatalog{Catalog: c, client: glue.NewFromConfig(cfg), where: "glue catalog"}
	if id, ok := props[icebergglue.CatalogIdKey]; ok {
		gc.catalogID = &id
	}
	switch {
	case props[icebergglue.Endpoint] != "":
		gc.where += " at " + redact.URL(props[icebergglue.Endpoint])
	case cfg.Region != "":
		gc.where += " (region " + cfg.Region + ")"
	}
	return gc, nil
}

// glueAWSConfig is the AWS configuration iceberg-go's glue catalog makes
// of its glue.* properties (its own function for it is unexported):
// region, endpoint, retries and static credentials, else the SDK's
// default chain.
func glueAWSConfig(ctx context.Context, p iceberg.Properties) (aws.Config, error) {
	var opts []func(*awsconfig.LoadOptions) error
	if v := p[icebergglue.Region]; v != "" {
		opts = append(opts, awsconfig.WithRegion(v))
	}
	if v := p[icebergglue.Endpoint]; v != "" {
		opts = append(opts, awsconfig.WithBaseEndpoint(v))
	}
	if v, ok := p[icebergglue.MaxRetries]; ok {
		n, err := strconv.Atoi(v)
		if err != nil {
			return aws.Config{}, fmt.Errorf("property %s %q: want a number", icebergglue.MaxRetries, v)
		}
		opts = append(opts, awsconfig.WithRetryMaxAttempts(n))
	}
	if v, ok := p[icebergglue.RetryMode]; ok {
		m, err := aws.ParseRetryMode(v)
		if err != nil {
			return aws.Config{}, fmt.Errorf("property %s: %w", icebergglue.RetryMode, err)
		}
		opts = append(opts, awsconfig.WithRetryMode(m))
	}
	key, secret, token := p[icebergglue.AccessKeyID], p[icebergglue.SecretAccessKey], p[icebergglue.SessionToken]
	switch {
	case key == "" && secret == "" && token != "":
		return aws.Config{}, fmt.Errorf("incomplete static AWS credentials: %s requires %s and %s", icebergglue.SessionToken, icebergglue.AccessKeyID, icebergglue.SecretAccessKey)
	case (key == "") != (secret == ""):
		return aws.Config{}, fmt.Errorf("incomplete static AWS credentials: %s and %s must be configured together", icebergglue.AccessKeyID, icebergglue.SecretAccessKey)
	case key != "":
		opts = append(opts, awsconfig.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(key, secret, token)))
	}
	return awsconfig.LoadDefaultConfig(ctx, opts...)
}

// boundedAWSClient reads every answer of the AWS SDK's client through a
// bound of limit bytes (see boundedBody): the SDK decodes answers whole,
// so an endless one would take all memory.
//
// It also sends every request body without its WriteTo (awsbody.Wrap):
// with it, an answer longer than the connection's first buffer failed
// with "use of closed network connection" now and then, in place of its
// bound's error or its tables.
type boundedAWSClient struct {
	next  aws.HTTPClient
	limit int64
}

func (c *boundedAWSClient) Do(req *http.Request) (*http.Response, error) {
	awsbody.Wrap(req)
	resp, err := c.next.Do(req)
	if err != nil {
		return nil, err
	}
	a, _ := req.Context().Value(answersKey{}).(*answers)
	boundBody(resp, req.URL, c.limit, a)
	return resp, nil
}

// checkGlue pages GetTables once per watched database (pages of
// glueTablesPerPage): a table whose metadata_location is not the one it
// loaded is woken. A database the catalog does not have leaves its tables
// to their own polls (whose loads say what became of them).
func (h *catalogHandle) checkGlue(ctx context.Context, es []*watchEntry) error {
	locs := map[string]string{}
	ctx, answered := watchAnswers(ctx)
	var where string
	_, err := h.use(ctx, func(ctx context.Context, c catalog.Catalog) error {
		gc, ok := c.(*glueCatalog)
		if !ok {
			return nil
		}
		where = gc.where
		for _, db := range namespaces(es) {
			if err := gc.tables(ctx, db, locs); err != nil {
				return fmt.Errorf("database %s: %w", db, answered(err))
			}
		}
		return nil
	})
	if err != nil {
		if where == "" {
			where = "glue catalog"
		}
		return throttledIf(fmt.Errorf("check %s for changes: %w", where, err))
	}
	h.watch.applyLocations(es, locs, true)
	return nil
}

// tables adds the metadata locations of database db's Iceberg tables to
// locs, as DB.NAME.
func (gc *glueCatalog) tables(ctx context.Context, db string, locs map[string]string) error {
	var token *string
	seen := map[string]bool{}
	for page := 0; ; page++ {
		if page == glueMaxPages {
			return fmt.Errorf("GetTables sent more than %d pages of tables (%d tables): the check reads no more of it", glueMaxPages, glueMaxPages*glueTablesPerPage)
		}
		out, err := gc.client.GetTables(ctx, &glue.GetTablesInput{
			DatabaseName: &db, CatalogId: gc.catalogID, NextToken: token, MaxResults: aws.Int32(glueTablesPerPage),
		})
		var nf *gluetypes.EntityNotFoundException
		if errors.As(err, &nf) {
			return nil
		}
		if err != nil {
			return err
		}
		for _, t := range out.TableList {
			if t.Name == nil || !strings.EqualFold(t.Parameters["table_type"], "ICEBERG") {
				continue
			}
			if loc := t.Parameters["metadata_location"]; loc != "" {
				locs[strings.ToLower(db+"."+*t.Name)] = loc
			}
		}
		if out.NextToken == nil || *out.NextToken == "" {
			return nil
		}
		if seen[*out.NextToken] {
			return fmt.Errorf("GetTables sent the same NextToken twice (after %d pages): the check reads no more of it", page+1)
		}
		seen[*out.NextToken] = true
		token = out.NextToken
	}
}

// namespaces are the namespaces of es' tables, each once, in the order
// met.
func namespaces(es []*watchEntry) []string {
	var out []string
	seen := map[string]bool{}
	for _, e := range es {
		if ns := strings.Join(e.ident[:len(e.ident)-1], "."); !seen[ns] {
			seen[ns] = true
			out = append(out, ns)
		}
	}
	return out
}
