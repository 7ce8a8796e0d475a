package source

import (
	"fmt"
	"net/url"
	"strings"

	iceio "github.com/apache/iceberg-go/io"

	"github.com/icecdc/icecdc/internal/redact"
)

// urlProps are the catalog properties that hold the URL of a service:
// their userinfo is a secret, and a URL that does not parse is refused
// here, naming the property, before a library quotes it whole in an
// error.
var urlProps = []string{
	"uri", iceio.S3EndpointURL, iceio.S3ProxyURI, "glue.endpoint", iceio.GCSEndpoint,
	"oauth2-server-uri", "rest.authorization-url",
}

// checkURLProps refuses a URL property that does not parse; the error
// shows the URL without its userinfo. The uri is CheckCatalogURI's: a sql
// catalog's is a file or a database's connection string, which its
// driver reads.
func checkURLProps(props map[string]string) error {
	for _, k := range urlProps[1:] {
		v, ok := props[k]
		if !ok || v == "" {
			continue
		}
		if _, err := url.Parse(v); err != nil {
			return fmt.Errorf("%s %s: %s", k, redact.URL(v), redact.ParseReason(err))
		}
	}
	return nil
}

// urlSecrets returns the userinfo secrets of the URLs among the catalog's
// properties and its uri, as written and decoded.
func urlSecrets(o Options) []string {
	var out []string
	add := func(v string) {
		if strings.Contains(v, "://") {
			out = append(out, redact.Userinfo(v)...)
		}
	}
	add(o.CatalogURI)
	for _, k := range urlProps {
		add(o.Props[k])
	}
	return out
}
