package localstack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http/httptest"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"
	mtypes "github.com/truora/minidyn/types"

	"github.com/idemkey/idemkey/internal/emuload"
)

// serveFront serves f on loopback for the test and returns its URL and a
// client for it.
func serveFront(t *testing.T, f *front) (string, *dynamodb.Client) {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return srv.URL, clientFor(srv.URL)
}

// createIndexedTable creates table keyed by "pk" (S) with the global
// secondary index "by-exp": partition key "b" (S), sort key "exp" (N),
// keys only.
func createIndexedTable(t *testing.T, c *dynamodb.Client, table string) {
	t.Helper()
	_, err := c.CreateTable(context.Background(), &dynamodb.CreateTableInput{
		TableName: &table, BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("b"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("exp"), AttributeType: types.ScalarAttributeTypeN},
		},
		KeySchema: []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{
			IndexName: aws.String("by-exp"),
			KeySchema: []types.KeySchemaElement{
				{AttributeName: aws.String("b"), KeyType: types.KeyTypeHash},
				{AttributeName: aws.String("exp"), KeyType: types.KeyTypeRange},
			},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly},
		}},
	})
	require.NoError(t, err)
}

// indexedItems returns n items of four buckets whose exp values all have
// ten digits (so that minidyn's string order of the sort key is its
// numeric order), a few with equal exp, and every seventh without a bucket.
func indexedItems(count int) []map[string]types.AttributeValue {
	r := rand.New(rand.NewPCG(14, 2))
	items := make([]map[string]types.AttributeValue, count)
	for i := range items {
		it := map[string]types.AttributeValue{
			"pk":  s(fmt.Sprintf("key-%04d", r.IntN(1_000_000))),
			"exp": n(fmt.Sprint(1_800_000_000 + r.IntN(count/2))),
			"v":   s(fmt.Sprint(i)),
		}
		if i%7 != 0 {
			it["b"] = s(fmt.Sprintf("b%d", i%4))
		}
		items[i] = it
	}
	return items
}

func TestIndexQueryAnswersAsMinidyn(t *testing.T) {
	fast := newFront(newEngine(), resolveOptions(nil))
	slow := newFront(newEngine(), resolveOptions(nil))
	slow.minidynIndexQuery = true
	_, fc := serveFront(t, fast)
	_, sc := serveFront(t, slow)
	ctx := context.Background()
	for _, c := range []*dynamodb.Client{fc, sc} {
		createIndexedTable(t, c, "t")
		for _, it := range indexedItems(300) {
			putItem(t, c, "t", it)
		}
	}
	conditions := []string{"#b = :b", "#b = :b AND #e < :t", "#e <= :t AND #b = :b", "(#b = :b) AND (#e BETWEEN :x AND :t)", "#b = :b AND #e > :x", "#b = :b AND #e = :x"}
	queries := 0
	for bucket := range 5 { // b4 is empty
		for _, cond := range conditions {
			for _, limit := range []int32{0, 1, 7, 50} {
				for _, forward := range []bool{true, false} {
					in := &dynamodb.QueryInput{
						TableName: aws.String("t"), IndexName: aws.String("by-exp"), KeyConditionExpression: aws.String(cond),
						ExpressionAttributeNames: map[string]string{"#b": "b"}, ScanIndexForward: aws.Bool(forward),
						ExpressionAttributeValues: map[string]types.AttributeValue{":b": s(fmt.Sprintf("b%d", bucket))},
					}
					if cond != "#b = :b" {
						in.ExpressionAttributeNames["#e"] = "exp"
					}
					if strings.Contains(cond, ":x") {
						in.ExpressionAttributeValues[":x"] = n("1800000040")
					}
					if strings.Contains(cond, ":t") {
						in.ExpressionAttributeValues[":t"] = n("1800000100")
					}
					if limit > 0 {
						in.Limit = aws.Int32(limit)
					}
					name := fmt.Sprintf("b%d %q limit=%d forward=%t", bucket, cond, limit, forward)
					for page := 0; ; page++ {
						want, err := sc.Query(ctx, in)
						require.NoError(t, err, name)
						got, err := fc.Query(ctx, in)
						require.NoError(t, err, name)
						queries++
						if len(want.Items) == 0 {
							want.Items = []map[string]types.AttributeValue{} // minidyn leaves an empty page's Items out
						}
						require.Equal(t, want.Items, got.Items, "%s page %d", name, page)
						require.Equal(t, want.Count, got.Count, "%s page %d", name, page)
						require.Equal(t, want.LastEvaluatedKey, got.LastEvaluatedKey, "%s page %d", name, page)
						if len(got.LastEvaluatedKey) == 0 {
							break
						}
						in.ExclusiveStartKey = got.LastEvaluatedKey
					}
				}
			}
		}
	}
	t.Logf("%d pages compared", queries)

	// Then with a write between pages, by each write operation in turn:
	// the front's partitions must follow every one. minidyn's own index is
	// no oracle once items move between its entries, so each page is
	// compared with the same page computed from a consistent Scan of the
	// table.
	for i := range 60 {
		in := &dynamodb.QueryInput{TableName: aws.String("t"), IndexName: aws.String("by-exp"),
			KeyConditionExpression:    aws.String("b = :b AND exp < :t"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":b": s(fmt.Sprintf("b%d", i%4)), ":t": n("1800000120")},
			Limit:                     aws.Int32(int32(1 + i%9)), ScanIndexForward: aws.Bool(i%3 != 0)}
		for page := 0; ; page++ {
			got, err := fc.Query(ctx, in)
			require.NoError(t, err)
			require.Equal(t, expectedPage(t, fc, in), got.Items, "query %d page %d", i, page)
			if len(got.LastEvaluatedKey) == 0 {
				break
			}
			in.ExclusiveStartKey = got.LastEvaluatedKey
			require.NoError(t, writes(i*31+page)(fc))
		}
	}
}

// expectedPage computes the page of in (an index query of the form b = :b
// AND exp < :t) from a consistent Scan of the whole table.
func expectedPage(t *testing.T, c *dynamodb.Client, in *dynamodb.QueryInput) []map[string]types.AttributeValue {
	t.Helper()
	var all []map[string]types.AttributeValue
	scan := &dynamodb.ScanInput{TableName: in.TableName, ConsistentRead: aws.Bool(true)}
	for {
		out, err := c.Scan(context.Background(), scan)
		require.NoError(t, err)
		all = append(all, out.Items...)
		if len(out.LastEvaluatedKey) == 0 {
			break
		}
		scan.ExclusiveStartKey = out.LastEvaluatedKey
	}
	str := func(it map[string]types.AttributeValue, k string) string {
		switch v := it[k].(type) {
		case *types.AttributeValueMemberS:
			return v.Value
		case *types.AttributeValueMemberN:
			return v.Value
		}
		return ""
	}
	bucket, before := str(in.ExpressionAttributeValues, ":b"), str(in.ExpressionAttributeValues, ":t")
	type e struct{ exp, pk string }
	less := func(a, b e) bool { // exp values all have ten digits
		if a.exp != b.exp {
			return a.exp < b.exp
		}
		return a.pk < b.pk
	}
	forward := aws.ToBool(in.ScanIndexForward)
	var part []e
	for _, it := range all {
		if str(it, "b") == bucket && str(it, "exp") < before {
			part = append(part, e{str(it, "exp"), str(it, "pk")})
		}
	}
	sort.Slice(part, func(i, j int) bool {
		if forward {
			return less(part[i], part[j])
		}
		return less(part[j], part[i])
	})
	out := []map[string]types.AttributeValue{}
	for _, x := range part {
		if in.ExclusiveStartKey != nil {
			start := e{str(in.ExclusiveStartKey, "exp"), str(in.ExclusiveStartKey, "pk")}
			if forward && !less(start, x) || !forward && !less(x, start) {
				continue
			}
		}
		if len(out) == int(aws.ToInt32(in.Limit)) {
			break
		}
		out = append(out, map[string]types.AttributeValue{"pk": s(x.pk), "b": s(bucket), "exp": n(x.exp)})
	}
	return out
}

func TestBulkLoadedTableAnswersAsOneLoadedItemByItem(t *testing.T) {
	byItem := newFront(newEngine(), resolveOptions(nil))
	bulk := newFront(newEngine(), resolveOptions(nil))
	_, ic := serveFront(t, byItem)
	bulkURL, bc := serveFront(t, bulk)
	ctx := context.Background()
	items := indexedItems(400)
	createIndexedTable(t, ic, "t")
	createIndexedTable(t, bc, "t")
	for _, it := range items {
		putItem(t, ic, "t", it)
	}
	require.NoError(t, emuload.Put(ctx, bulkURL, "t", items[:150]))
	require.NoError(t, emuload.Put(ctx, bulkURL, "t", items[150:])) // into a table that has items

	for _, it := range items[:40] {
		key := map[string]types.AttributeValue{"pk": it["pk"]}
		want, err := ic.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("t"), Key: key})
		require.NoError(t, err)
		got, err := bc.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("t"), Key: key})
		require.NoError(t, err)
		require.Equal(t, want.Item, got.Item)
	}
	scanPages := func(c *dynamodb.Client, index *string) [][]map[string]types.AttributeValue {
		var pages [][]map[string]types.AttributeValue
		in := &dynamodb.ScanInput{TableName: aws.String("t"), IndexName: index, Limit: aws.Int32(37)}
		for {
			out, err := c.Scan(ctx, in)
			require.NoError(t, err)
			pages = append(pages, out.Items)
			if len(out.LastEvaluatedKey) == 0 {
				return pages
			}
			in.ExclusiveStartKey = out.LastEvaluatedKey
		}
	}
	require.Equal(t, scanPages(ic, nil), scanPages(bc, nil), "Scan of the table")
	require.Equal(t, scanPages(ic, aws.String("by-exp")), scanPages(bc, aws.String("by-exp")), "Scan of the index")
	for _, slowQuery := range []bool{false, true} {
		byItem.minidynIndexQuery, bulk.minidynIndexQuery = slowQuery, slowQuery
		for bucket := range 4 {
			in := &dynamodb.QueryInput{TableName: aws.String("t"), IndexName: aws.String("by-exp"),
				KeyConditionExpression:    aws.String("b = :b AND exp < :t"),
				ExpressionAttributeValues: map[string]types.AttributeValue{":b": s(fmt.Sprintf("b%d", bucket)), ":t": n("1800000150")}}
			want, err := ic.Query(ctx, in)
			require.NoError(t, err)
			got, err := bc.Query(ctx, in)
			require.NoError(t, err)
			require.NotEmpty(t, got.Items)
			require.Equal(t, want.Items, got.Items, "bucket %d, minidyn's query %t", bucket, slowQuery)
		}
	}
	wantDesc, err := ic.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("t")})
	require.NoError(t, err)
	gotDesc, err := bc.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("t")})
	require.NoError(t, err)
	require.Equal(t, aws.ToInt64(wantDesc.Table.ItemCount), aws.ToInt64(gotDesc.Table.ItemCount))
	require.Equal(t, aws.ToInt64(wantDesc.Table.GlobalSecondaryIndexes[0].ItemCount), aws.ToInt64(gotDesc.Table.GlobalSecondaryIndexes[0].ItemCount))

	code, _ := rawCall(t, bulkURL, "BulkPutItems", `{"TableName":"t","Items":[{"b":{"S":"x"}}]}`)
	require.Equal(t, 400, code, "the bulk load is reached only by its own target")
}

func TestItemSizeFollowsDynamoDBRules(t *testing.T) {
	str := func(v string) *mtypes.Item { return &mtypes.Item{S: &v} }
	num := func(v string) *mtypes.Item { return &mtypes.Item{N: &v} }
	yes := true
	for _, c := range []struct {
		item map[string]*mtypes.Item
		want int
	}{
		{map[string]*mtypes.Item{"pk": str("abc")}, 2 + 3},
		{map[string]*mtypes.Item{"exp": num("1800000123")}, 3 + 6}, // 10 significant digits: 5 bytes + 1
		{map[string]*mtypes.Item{"n": num("1000")}, 1 + 2},         // trailing zeros trimmed: 1 digit
		{map[string]*mtypes.Item{"n": num("-0.0125")}, 1 + 3},      // 3 significant digits: 2 bytes + 1
		{map[string]*mtypes.Item{"ok": {BOOL: &yes}}, 2 + 1},
		{map[string]*mtypes.Item{"b": {B: []byte{1, 2, 3, 4}}}, 1 + 4},
		{map[string]*mtypes.Item{"l": {L: []*mtypes.Item{str("ab"), num("7")}}}, 1 + 3 + (1 + 2) + (1 + 2)},
		{map[string]*mtypes.Item{"m": {M: map[string]*mtypes.Item{"k": str("v")}}}, 1 + 3 + 1 + 1 + 1},
		{map[string]*mtypes.Item{"ss": {SS: []*string{aws.String("ab"), aws.String("c")}}}, 2 + 3},
	} {
		b, _ := json.Marshal(wireFromTypes(c.item))
		require.Equal(t, c.want, itemSize(c.item), "%s", b)
	}
}

// writes returns the i-th write of a sequence that cycles through PutItem,
// UpdateItem (of the sort key), DeleteItem, BatchWriteItem and
// TransactWriteItems on items of the index's buckets. Only writes minidyn's
// own index handles correctly are made: every item written has a bucket.
func writes(i int) func(c *dynamodb.Client) error {
	ctx := context.Background()
	key := fmt.Sprintf("w-%04d", i%97)
	item := map[string]types.AttributeValue{"pk": s(key), "b": s(fmt.Sprintf("b%d", i%4)), "exp": n(fmt.Sprint(1_800_000_000 + (i*37)%150)), "v": s("w")}
	table := aws.String("t")
	switch i % 5 {
	case 0:
		return func(c *dynamodb.Client) error {
			_, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: table, Item: item})
			return err
		}
	case 1:
		return func(c *dynamodb.Client) error {
			_, err := c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: table, Key: map[string]types.AttributeValue{"pk": s(key)},
				UpdateExpression: aws.String("SET b = :b, exp = :e"), ConditionExpression: aws.String("attribute_exists(b)"),
				ExpressionAttributeValues: map[string]types.AttributeValue{":b": item["b"], ":e": item["exp"]}})
			var ccf *types.ConditionalCheckFailedException
			if errors.As(err, &ccf) {
				return nil
			}
			return err
		}
	case 2:
		return func(c *dynamodb.Client) error {
			_, err := c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: table, Key: map[string]types.AttributeValue{"pk": s(fmt.Sprintf("w-%04d", (i+40)%97))}})
			return err
		}
	case 3:
		return func(c *dynamodb.Client) error {
			_, err := c.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{"t": {
				{PutRequest: &types.PutRequest{Item: item}},
				{DeleteRequest: &types.DeleteRequest{Key: map[string]types.AttributeValue{"pk": s(fmt.Sprintf("w-%04d", (i+7)%97))}}},
			}}})
			return err
		}
	}
	return func(c *dynamodb.Client) error {
		_, err := c.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{{Put: &types.Put{TableName: table, Item: item}}}})
		return err
	}
}

func TestMinidynLayoutIsTheOneTheFrontReads(t *testing.T) {
	if err := checkMinidynLayout(); err != nil {
		t.Fatal(err)
	}
}

// The attribute values' layouts that typesItem may reinterpret, and some
// it must not.
type (
	layoutWire struct {
		S *string
		L []*layoutWire
		M map[string]*layoutWire
	}
	layoutCore struct {
		_ struct{}
		S *string
		L []*layoutCore
		M map[string]*layoutCore
	}
	layoutSwapped struct {
		L []*layoutSwapped
		S *string
		M map[string]*layoutSwapped
	}
	layoutOtherType struct {
		S *[]byte
		L []*layoutOtherType
		M map[string]*layoutOtherType
	}
	layoutOtherKey struct {
		S *string
		L []*layoutOtherKey
		M map[int]*layoutOtherKey
	}
	layoutExtra struct {
		S *string
		L []*layoutExtra
		M map[string]*layoutExtra
		N *string
	}
	layoutFewer struct {
		S *string
		L []*layoutFewer
	}
	layoutWideBlank struct {
		_ int
		S *string
		L []*layoutWideBlank
		M map[string]*layoutWideBlank
	}
)

func TestSameLayoutRefusesWhatTypesItemCouldMisread(t *testing.T) {
	wire := reflect.TypeFor[layoutWire]()
	if err := sameLayout(wire, reflect.TypeFor[layoutCore]()); err != nil {
		t.Errorf("same layout refused: %v", err)
	}
	for _, core := range []reflect.Type{
		reflect.TypeFor[layoutSwapped](), reflect.TypeFor[layoutOtherType](), reflect.TypeFor[layoutOtherKey](),
		reflect.TypeFor[layoutExtra](), reflect.TypeFor[layoutFewer](), reflect.TypeFor[layoutWideBlank](),
	} {
		if err := sameLayout(wire, core); err == nil {
			t.Errorf("%s accepted as the layout of %s", core, wire)
		}
	}
}
