package multiregion_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idemkey/idemkey/multiregion"
)

// Every key has a home region and a failover order, the same in every
// process that knows the same region names.
func ExampleHomeOrder() {
	regions := []string{"us-east-1", "eu-west-1", "ap-southeast-2"}
	for _, key := range []string{"order-41", "order-42", "order-43"} {
		fmt.Println(key, multiregion.HomeOrder("tenant-a", key, regions))
	}
	// Output:
	// order-41 [eu-west-1 us-east-1 ap-southeast-2]
	// order-42 [us-east-1 ap-southeast-2 eu-west-1]
	// order-43 [ap-southeast-2 eu-west-1 us-east-1]
}

// Strong mode refuses effects staged in transactions: MRSC tables reject
// TransactWriteItems.
func ExampleNew_strongRefusesStagedEffects() {
	// One client per region (in real use dynamodb.NewFromConfig(cfg, ...)):
	// New refuses a client configured for another region than its name.
	client := dynamodb.New(dynamodb.Options{Region: "us-east-1"})
	inRegion := func(name string) *dynamodb.Client {
		return dynamodb.New(client.Options(), func(o *dynamodb.Options) { o.Region = name })
	}
	var regions []multiregion.Region
	for _, name := range []string{"us-east-1", "us-east-2", "us-west-2"} {
		regions = append(regions, multiregion.NewRegion(name, inRegion(name), "idemkey-keys"))
	}
	_, err := multiregion.New(regions, func(o *multiregion.Options) {
		o.Mode = multiregion.Strong
		o.Eviction = multiregion.EvictBySweeper
	})
	fmt.Println(errors.Is(err, multiregion.ErrTransactionsUnsupported))

	store, err := multiregion.New(regions, func(o *multiregion.Options) {
		o.Mode = multiregion.Strong
		o.Local = "us-east-2"
		o.Effects = multiregion.EffectsKeyed // each effect written after the claim, keyed by the idempotency key
		o.Eviction = multiregion.EvictBySweeper
	})
	fmt.Println(err, store.Order("tenant-a", "order-42"))
	// Output:
	// true
	// <nil> [us-east-2 us-east-1 us-west-2]
}

// HomeRegion mode with failover, and the metric of every failover decision.
func ExampleNew_homeRegionWithFailover() {
	euWest1 := dynamodb.New(dynamodb.Options{Region: "eu-west-1"})
	euCentral1 := dynamodb.New(dynamodb.Options{Region: "eu-central-1"})
	var counters multiregion.Counters
	store, err := multiregion.New([]multiregion.Region{
		multiregion.NewRegion("eu-west-1", euWest1, "idemkey-keys"),
		multiregion.NewRegion("eu-central-1", euCentral1, "idemkey-keys"),
	}, func(o *multiregion.Options) {
		o.Mode = multiregion.HomeRegion
		o.Eviction = multiregion.EvictBySweeper // TTL off; a sweeper per region (dynamostore.SweepOptions.Region)
		o.Pins = map[string]string{"tenant-de": "eu-central-1"}
		o.Failover = true
		o.Observer = counters.Observe
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(store.Home("tenant-de", "invoice-7"), counters.Count(multiregion.EventFailover))
	// Output:
	// eu-central-1 0
}

// Adding a region: the operator moves the table's topology record one step
// at a time, through one region, waiting between steps as
// multiregion/README.md describes (not run: it needs a table).
func ExampleAdvanceTopology() {
	ctx := context.Background()
	client := dynamodb.New(dynamodb.Options{Region: "us-east-1"})
	through := multiregion.NewRegion("us-east-1", client, "idemkey-keys")
	next := multiregion.Topology{Regions: []string{"us-east-1", "eu-west-1", "ap-southeast-2", "eu-central-1"}}
	for _, step := range []string{"prepare", "switch", "finish"} {
		rec, err := multiregion.AdvanceTopology(ctx, through, next)
		if err != nil {
			fmt.Println(step, err)
			return
		}
		fmt.Println(step, rec)
		// Wait here: replication lag + Options.TopologyRefresh + the
		// longest request (twice the lag before finish); between prepare
		// and switch, deploy the processes configured with next.Regions.
	}
}
