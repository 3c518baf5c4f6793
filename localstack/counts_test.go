package localstack

import (
	"context"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// fillCounts creates table "t" keyed by pk and sk, with items pk "p",
// sk "00" to "09", and v equal to the sort key's number, plus one item in
// partition "q".
func fillCounts(t *testing.T, c *dynamodb.Client) {
	t.Helper()
	createTable(t, c, "t", "sk")
	for i := range 10 {
		putItem(t, c, "t", map[string]types.AttributeValue{"pk": s("p"), "sk": s(fmt.Sprintf("%02d", i)), "v": n(fmt.Sprint(i))})
	}
	putItem(t, c, "t", map[string]types.AttributeValue{"pk": s("q"), "sk": s("00"), "v": n("0")})
}

func TestScanWithoutFilterReportsScannedCountEqualToCount(t *testing.T) {
	c := embedded(t).Client
	fillCounts(t, c)
	out, err := c.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String("t")})
	if err != nil {
		t.Fatal(err)
	}
	if out.Count != 11 || out.ScannedCount != 11 {
		t.Errorf("Count, ScannedCount = %d, %d; want 11, 11", out.Count, out.ScannedCount)
	}
}

func TestScanWithFilterReportsTheItemsEvaluatedBeforeFiltering(t *testing.T) {
	c := embedded(t).Client
	fillCounts(t, c)
	out, err := c.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String("t"),
		FilterExpression:          aws.String("#v >= :min"),
		ExpressionAttributeNames:  map[string]string{"#v": "v"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":min": n("7")},
		ProjectionExpression:      aws.String("pk, #v"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if out.Count != 3 || out.ScannedCount != 11 || len(out.Items) != 3 {
		t.Errorf("Count, ScannedCount, len(Items) = %d, %d, %d; want 3, 11, 3", out.Count, out.ScannedCount, len(out.Items))
	}
}

func TestScanWithFilterAndLimitReportsTheScannedCountOfThePage(t *testing.T) {
	c := embedded(t).Client
	fillCounts(t, c)
	var count, scanned int32
	p := dynamodb.NewScanPaginator(c, &dynamodb.ScanInput{TableName: aws.String("t"), Limit: aws.Int32(4),
		FilterExpression: aws.String("v >= :min"), ExpressionAttributeValues: map[string]types.AttributeValue{":min": n("7")}})
	for pages := 0; p.HasMorePages(); pages++ {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if page.ScannedCount > 4 || (page.LastEvaluatedKey != nil && page.ScannedCount != 4) {
			t.Errorf("page %d: ScannedCount = %d with LastEvaluatedKey %v; want 4 on full pages", pages, page.ScannedCount, page.LastEvaluatedKey != nil)
		}
		count += page.Count
		scanned += page.ScannedCount
	}
	if count != 3 || scanned != 11 {
		t.Errorf("total Count, ScannedCount = %d, %d; want 3, 11", count, scanned)
	}
}

func TestQueryWithFilterReportsTheItemsMatchingTheKeyCondition(t *testing.T) {
	c := embedded(t).Client
	fillCounts(t, c)
	out, err := c.Query(context.Background(), &dynamodb.QueryInput{TableName: aws.String("t"),
		KeyConditionExpression:    aws.String("#pk = :p AND sk >= :from"),
		FilterExpression:          aws.String("#v < :max"),
		ExpressionAttributeNames:  map[string]string{"#pk": "pk", "#v": "v"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":p": s("p"), ":from": s("02"), ":max": n("5")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if out.Count != 3 || out.ScannedCount != 8 {
		t.Errorf("Count, ScannedCount = %d, %d; want 3, 8", out.Count, out.ScannedCount)
	}
}

func TestQueryWithoutFilterReportsScannedCountEqualToCount(t *testing.T) {
	c := embedded(t).Client
	fillCounts(t, c)
	out, err := c.Query(context.Background(), &dynamodb.QueryInput{TableName: aws.String("t"),
		KeyConditionExpression: aws.String("pk = :p"), ExpressionAttributeValues: map[string]types.AttributeValue{":p": s("q")}})
	if err != nil {
		t.Fatal(err)
	}
	if out.Count != 1 || out.ScannedCount != 1 {
		t.Errorf("Count, ScannedCount = %d, %d; want 1, 1", out.Count, out.ScannedCount)
	}
}

func TestSelectCountReturnsCountsWithoutItems(t *testing.T) {
	c := embedded(t).Client
	fillCounts(t, c)
	out, err := c.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String("t"), Select: types.SelectCount,
		FilterExpression: aws.String("v >= :min"), ExpressionAttributeValues: map[string]types.AttributeValue{":min": n("7")}})
	if err != nil {
		t.Fatal(err)
	}
	if out.Count != 3 || out.ScannedCount != 11 || out.Items != nil {
		t.Errorf("Count, ScannedCount, Items = %d, %d, %v; want 3, 11, none", out.Count, out.ScannedCount, out.Items)
	}
}

func TestDisableScanCountsLeavesScannedCountZeroAndItemsOnSelectCount(t *testing.T) {
	c := embedded(t, func(o *Options) { o.DisableScanCounts = true }).Client
	fillCounts(t, c)
	out, err := c.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String("t"), Select: types.SelectCount})
	if err != nil {
		t.Fatal(err)
	}
	if out.Count != 11 || out.ScannedCount != 0 || len(out.Items) != 11 {
		t.Errorf("Count, ScannedCount, len(Items) = %d, %d, %d; want 11, 0, 11", out.Count, out.ScannedCount, len(out.Items))
	}
}
