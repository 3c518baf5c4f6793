package regionsim

import (
	"time"

	"github.com/idemkey/idemkey/dynamostore"
)

// regionSweeper is the sweeper of region r in HomeRegion mode: over r's
// replica, through r's client (its deletes replicate), deleting only the
// records r wrote.
func regionSweeper(r *Region, table string, now func() time.Time) *dynamostore.Sweeper {
	return dynamostore.NewSweeper(r.Client, table, func(o *dynamostore.SweepOptions) {
		o.Region = r.Name
		o.Now = now
		o.ItemsPerSecond = -1
		o.Segments = 1
	})
}
