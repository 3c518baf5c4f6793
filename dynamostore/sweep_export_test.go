package dynamostore

import "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

// SweepTestItem returns the item a Store writes for rec: encoded by the
// store's own encoders, so that tests can seed thousands of records with
// BatchWriteItem instead of one claim each. A completed record needs
// rec.Response.
func SweepTestItem(rec *Record) map[string]types.AttributeValue {
	if rec.State == StateCompleted {
		return encodeCompleted(rec, DefaultCompressAbove, maxItemBytes)
	}
	return baseItem(rec)
}
