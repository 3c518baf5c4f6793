package regionsim

import (
	"context"
	"time"

	"github.com/idemkey/idemkey/dynamostore"
)

// regionSweeper is the sweeper of region r in HomeRegion mode: over r's
// replica, through r's client (its deletes replicate), deleting only the
// records owns gives it (multiregion.Store.SweepOwner).
func regionSweeper(r *Region, table string, now func() time.Time, owns func(context.Context, string, string, string) (bool, bool)) *dynamostore.Sweeper {
	return dynamostore.NewSweeper(r.Client, table, func(o *dynamostore.SweepOptions) {
		o.Region = r.Name
		o.Owns = owns
		o.Now = now
		o.ItemsPerSecond = -1
		o.Segments = 1
	})
}
