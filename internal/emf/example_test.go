package emf_test

import (
	"fmt"
	"os"
	"time"

	"github.com/idemkey/idemkey/internal/emf"
)

// A Lambda function publishes metrics by printing one EMF line to stdout.
func ExampleWrite() {
	err := emf.Write(os.Stdout, emf.Document{
		Namespace:  "idemkey",
		Timestamp:  time.UnixMilli(1_800_000_000_000),
		Dimensions: []emf.Dimension{{Name: "TableName", Value: "idemkey-keys"}},
		Metrics: []emf.Metric{
			{Name: "Evicted", Value: 42, Unit: emf.Count},
			{Name: "EvictionLagSeconds", Value: 7, Unit: emf.Seconds},
		},
	})
	if err != nil {
		fmt.Println(err)
	}
	// Output:
	// {"_aws":{"Timestamp":1800000000000,"CloudWatchMetrics":[{"Namespace":"idemkey","Dimensions":[["TableName"]],"Metrics":[{"Name":"Evicted","Unit":"Count"},{"Name":"EvictionLagSeconds","Unit":"Seconds"}]}]},"TableName":"idemkey-keys","Evicted":42,"EvictionLagSeconds":7}
}

// Validate checks a document from any source against the specification.
func ExampleValidate() {
	err := emf.Validate([]byte(`{"_aws":{"Timestamp":1800000000000,"CloudWatchMetrics":[{"Namespace":"idemkey","Dimensions":[[]],"Metrics":[{"Name":"Evicted","Unit":"Items"}]}]},"Evicted":1}`))
	fmt.Println(err)
	// Output:
	// emf: invalid document: Evicted: unit Items is not a CloudWatch unit
}
