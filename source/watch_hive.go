package source

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/hive"
	"github.com/beltran/gohive"
	"github.com/beltran/gohive/hive_metastore"
)

// hiveCatalog is iceberg-go's hive catalog on a metastore client icecdc
// keeps: iceberg-go has no call that reads many tables' metadata
// locations (its LoadTable is one get_table per table), so the change
// check asks the metastore's get_table_objects_by_name itself, through
// the same connection.
type hiveCatalog struct {
	*hive.Catalog
	meta *hive_metastore.ThriftHiveMetastoreClient
}

// hiveBatch is the tables one get_table_objects_by_name asks for.
const hiveBatch = 100

// openHive connects to the metastore as iceberg-go's hive catalog does
// (binary Thrift, no SASL; port 9083 by default) and makes the catalog on
// that connection.
func openHive(props iceberg.Properties) (catalog.Catalog, error) {
	u, err := url.Parse(props["uri"])
	if err != nil {
		return nil, fmt.Errorf("invalid URI: %w", err)
	}
	if u.Hostname() == "" {
		return nil, errors.New("invalid URI: host is required")
	}
	port := 9083
	if p := u.Port(); p != "" {
		if port, err = strconv.Atoi(p); err != nil || port < 1 || port > 65535 {
			return nil, fmt.Errorf("invalid port: %s", p)
		}
	}
	conf := gohive.NewMetastoreConnectConfiguration()
	conf.TransportMode = "binary"
	c, err := gohive.ConnectToMetastore(u.Hostname(), port, "NOSASL", conf)
	if err != nil {
		return nil, fmt.Errorf("failed to create Hive client: failed to connect to metastore: %w", err)
	}
	return &hiveCatalog{Catalog: hive.NewCatalogWithClient(&hiveClient{ThriftHiveMetastoreClient: c.Client, c: c}, props), meta: c.Client}, nil
}

// hiveClient is iceberg-go's hive.HiveClient on gohive's metastore
// client, whose Thrift client has its calls but for the three below.
// Closed, it fails its calls (the connection is closed) rather than
// panic.
type hiveClient struct {
	*hive_metastore.ThriftHiveMetastoreClient
	c *gohive.HiveMetastoreClient
}

var _ hive.HiveClient = (*hiveClient)(nil)

func (h *hiveClient) Close() error {
	h.c.Close()
	return nil
}

func (h *hiveClient) CheckLock(ctx context.Context, id int64) (*hive_metastore.LockResponse, error) {
	return h.c.Client.CheckLock(ctx, &hive_metastore.CheckLockRequest{Lockid: id})
}

func (h *hiveClient) Unlock(ctx context.Context, id int64) error {
	return h.c.Client.Unlock(ctx, &hive_metastore.UnlockRequest{Lockid: id})
}

// checkHive asks the metastore for the watched tables of each database in
// batches of hiveBatch names (one get_table_objects_by_name each), each
// batch one call of the catalog (so that the tables' own loads go
// between them): a table whose metadata_location is not the one it
// loaded is woken. A table the metastore does not name is left to its own
// polls.
func (h *catalogHandle) checkHive(ctx context.Context, es []*watchEntry) error {
	byDB := map[string][]string{}
	for _, e := range es {
		db := strings.Join(e.ident[:len(e.ident)-1], ".")
		byDB[db] = append(byDB[db], e.ident[len(e.ident)-1])
	}
	locs := map[string]string{}
	for _, db := range namespaces(es) {
		names := byDB[db]
		for len(names) > 0 {
			batch := names[:min(hiveBatch, len(names))]
			names = names[len(batch):]
			_, err := h.use(ctx, func(ctx context.Context, c catalog.Catalog) error {
				hc, ok := c.(*hiveCatalog)
				if !ok {
					return nil
				}
				tbls, err := hc.meta.GetTableObjectsByName(ctx, db, batch)
				if err != nil {
					return err
				}
				for _, t := range tbls {
					if t == nil || !strings.EqualFold(t.Parameters[hive.TableTypeKey], hive.TableTypeIceberg) {
						continue
					}
					if loc := t.Parameters[hive.MetadataLocationKey]; loc != "" {
						locs[strings.ToLower(db+"."+t.TableName)] = loc
					}
				}
				return nil
			})
			if err != nil {
				return fmt.Errorf("check for changes: database %s: %w", db, newStore(h.o).explainCatalog(h.o, err))
			}
		}
	}
	h.watch.applyLocations(es, locs, true)
	return nil
}
