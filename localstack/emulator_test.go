package localstack

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkey/idemkey/internal/ddbtest"
)

// The tests of this file state how DynamoDB answers what idemkey relies
// on. They run on ForTest's endpoint: the embedded emulator, or moto (or
// any other implementation) when AWS_ENDPOINT_URL_DYNAMODB is set, so that
// the emulator is checked against an independent implementation. Those
// marked embedded-only check what moto does not model.

type av = map[string]types.AttributeValue

// fixture is a fresh table keyed by the string "pk" on ForTest's endpoint.
func fixture(t *testing.T, sortKey string) (*dynamodb.Client, string) {
	t.Helper()
	ep := ForTest(t)
	name := TableName("emu")
	createTable(t, ep.Client, name, sortKey)
	t.Cleanup(func() {
		_, _ = ep.Client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: &name})
	})
	return ep.Client, name
}

func TestConditionalPutFailureCarriesTheOldItemWhenAskedFor(t *testing.T) {
	c, table := fixture(t, "")
	ctx := context.Background()
	putItem(t, c, table, av{"pk": s("a"), "state": s("done"), "list": &types.AttributeValueMemberL{Value: []types.AttributeValue{}}})
	put := func(mode types.ReturnValuesOnConditionCheckFailure) error {
		_, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: &table, Item: av{"pk": s("a")},
			ConditionExpression:                 aws.String("attribute_not_exists(pk)"),
			ReturnValuesOnConditionCheckFailure: mode})
		return err
	}
	old := conditionItem(t, put(types.ReturnValuesOnConditionCheckFailureAllOld))
	if got := old["state"]; got == nil || got.(*types.AttributeValueMemberS).Value != "done" {
		t.Errorf("Item = %v, want the stored item", old)
	}
	if l, ok := old["list"].(*types.AttributeValueMemberL); !ok || len(l.Value) != 0 {
		t.Errorf("an empty list comes back as %#v, want an empty L", old["list"])
	}
	if old := conditionItem(t, put(types.ReturnValuesOnConditionCheckFailureNone)); old != nil {
		t.Errorf("without ALL_OLD: Item = %v, want none", old)
	}
}

func TestPutItemReturnsTheReplacedItemOnlyForAllOld(t *testing.T) {
	c, table := fixture(t, "")
	ctx := context.Background()
	putItem(t, c, table, av{"pk": s("a"), "v": n("1")})
	out, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: &table, Item: av{"pk": s("a"), "v": n("2")}})
	if err != nil || out.Attributes != nil {
		t.Fatalf("PutItem = %v, %v; want no Attributes", out, err)
	}
	out, err = c.PutItem(ctx, &dynamodb.PutItemInput{TableName: &table, Item: av{"pk": s("a"), "v": n("3")}, ReturnValues: types.ReturnValueAllOld})
	if err != nil || out.Attributes["v"].(*types.AttributeValueMemberN).Value != "2" {
		t.Fatalf("PutItem ALL_OLD = %v, %v; want v=2", out.Attributes, err)
	}
}

func TestCancelledTransactionReportsEachActionAndTheOldItemAndAppliesNothing(t *testing.T) {
	c, table := fixture(t, "")
	putItem(t, c, table, av{"pk": s("held"), "owner": s("x")})
	err := transact(c, "",
		types.TransactWriteItem{Put: &types.Put{TableName: &table, Item: av{"pk": s("new")}}},
		types.TransactWriteItem{Put: &types.Put{TableName: &table, Item: av{"pk": s("held"), "owner": s("y")},
			ConditionExpression:                 aws.String("attribute_not_exists(pk)"),
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld}})
	reasons := cancellationReasons(t, err)
	if len(reasons) != 2 || aws.ToString(reasons[0].Code) != "None" || aws.ToString(reasons[1].Code) != "ConditionalCheckFailed" {
		t.Fatalf("reasons = %+v, want None, ConditionalCheckFailed", reasons)
	}
	if o, ok := reasons[1].Item["owner"].(*types.AttributeValueMemberS); !ok || o.Value != "x" {
		t.Errorf("the failed Put's reason carries Item %v, want the stored item", reasons[1].Item)
	}
	got, err := c.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: &table, Key: av{"pk": s("new")}, ConsistentRead: aws.Bool(true)})
	if err != nil || got.Item != nil {
		t.Errorf("GetItem(new) = %v, %v; want nothing applied", got.Item, err)
	}
}

func TestUpdateItemEvaluatesItsExpressionsAndReturnsTheNewItem(t *testing.T) {
	c, table := fixture(t, "")
	ctx := context.Background()
	up := func() (*dynamodb.UpdateItemOutput, error) {
		return c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: &table, Key: av{"pk": s("a")},
			UpdateExpression:          aws.String("SET #n = if_not_exists(#n, :zero) + :one REMOVE gone"),
			ConditionExpression:       aws.String("attribute_not_exists(#n) OR #n < :max"),
			ExpressionAttributeNames:  map[string]string{"#n": "count"},
			ExpressionAttributeValues: av{":zero": n("0"), ":one": n("1"), ":max": n("2")},
			ReturnValues:              types.ReturnValueAllNew})
	}
	for want := 1; want <= 2; want++ {
		out, err := up()
		if err != nil || out.Attributes["count"].(*types.AttributeValueMemberN).Value != fmt.Sprint(want) {
			t.Fatalf("update %d = %v, %v", want, out, err)
		}
	}
	if _, err := up(); apiErrorCode(err) != "ConditionalCheckFailedException" {
		t.Fatalf("third update: err = %v, want ConditionalCheckFailedException", err)
	}
	if got := getNumber(t, c, table, "a", "count"); got != "2" {
		t.Errorf("count = %s, want 2", got)
	}
}

// Embedded-only: moto answers HTTP 500.
func TestUndefinedExpressionValueIsRefusedBeforeAnythingIsRead(t *testing.T) {
	c, table := embedded(t).Client, "undefined"
	createTable(t, c, table, "")
	_, err := c.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: &table, Item: av{"pk": s("a")},
		ConditionExpression: aws.String("attribute_not_exists(pk) OR #s = :in_progress"), ExpressionAttributeNames: map[string]string{"#s": "state"}})
	if apiErrorCode(err) != "ValidationException" || !strings.Contains(err.Error(), ":in_progress") {
		t.Fatalf("err = %v, want a ValidationException naming :in_progress", err)
	}
}

func TestItemOverFourHundredKilobytesIsRefused(t *testing.T) {
	c, table := fixture(t, "")
	_, err := c.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: &table, Item: av{"pk": s("a"), "big": s(strings.Repeat("x", 420_000))}})
	if apiErrorCode(err) != "ValidationException" {
		t.Fatalf("err = %v, want ValidationException", err)
	}
}

// scanAll returns the pk values of every page of a (segment of a) scan
// with limit, following LastEvaluatedKey; remove deletes each page's last
// item before the next page is read.
func scanAll(t *testing.T, c *dynamodb.Client, in dynamodb.ScanInput, remove bool) []string {
	t.Helper()
	var got []string
	for {
		out, err := c.Scan(context.Background(), &in)
		if err != nil {
			t.Fatalf("Scan: %v", err)
		}
		for _, it := range out.Items {
			got = append(got, it["pk"].(*types.AttributeValueMemberS).Value)
		}
		if out.LastEvaluatedKey == nil {
			return got
		}
		if remove {
			if _, err := c.DeleteItem(context.Background(), &dynamodb.DeleteItemInput{TableName: in.TableName, Key: out.LastEvaluatedKey}); err != nil {
				t.Fatal(err)
			}
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

func TestParallelScanSegmentsPartitionTheTableAndPagesResumeAfterADeletedKey(t *testing.T) {
	c, table := fixture(t, "")
	var want []string
	for i := range 40 {
		pk := fmt.Sprintf("k%02d", i)
		want = append(want, pk)
		putItem(t, c, table, av{"pk": s(pk)})
	}
	var all []string
	for seg := range int32(3) {
		all = append(all, scanAll(t, c, dynamodb.ScanInput{TableName: &table, Segment: aws.Int32(seg), TotalSegments: aws.Int32(3), Limit: aws.Int32(4)}, false)...)
	}
	sort.Strings(all)
	if strings.Join(all, ",") != strings.Join(want, ",") {
		t.Errorf("the segments read %v, want each item once: %v", all, want)
	}
	// A sweeper deletes the last item of each page before reading the next.
	got := scanAll(t, c, dynamodb.ScanInput{TableName: &table, Limit: aws.Int32(5)}, true)
	if len(got) != 40 {
		t.Errorf("a scan deleting each page's last item read %d items, want 40", len(got))
	}
	if _, err := c.Scan(context.Background(), &dynamodb.ScanInput{TableName: &table, Segment: aws.Int32(3), TotalSegments: aws.Int32(3)}); apiErrorCode(err) != "ValidationException" {
		t.Errorf("segment 3 of 3: err = %v, want ValidationException", err)
	}
}

func TestIndexAddedByUpdateTableIsBackfilledAndQueriedInSortKeyOrder(t *testing.T) {
	c, table := fixture(t, "")
	ctx := context.Background()
	for i, exp := range []string{"10", "9", "100", "-1", "20"} {
		putItem(t, c, table, av{"pk": s(fmt.Sprint("k", i)), "b": s("0"), "exp": n(exp)})
	}
	putItem(t, c, table, av{"pk": s("unindexed")})
	_, err := c.UpdateTable(ctx, &dynamodb.UpdateTableInput{TableName: &table,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("b"), AttributeType: types.ScalarAttributeTypeS}, {AttributeName: aws.String("exp"), AttributeType: types.ScalarAttributeTypeN}},
		GlobalSecondaryIndexUpdates: []types.GlobalSecondaryIndexUpdate{{Create: &types.CreateGlobalSecondaryIndexAction{
			IndexName:             aws.String("by-exp"),
			KeySchema:             []types.KeySchemaElement{{AttributeName: aws.String("b"), KeyType: types.KeyTypeHash}, {AttributeName: aws.String("exp"), KeyType: types.KeyTypeRange}},
			Projection:            &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly},
			ProvisionedThroughput: &types.ProvisionedThroughput{ReadCapacityUnits: aws.Int64(1), WriteCapacityUnits: aws.Int64(1)},
		}}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := dynamodb.NewTableExistsWaiter(c).Wait(ctx, &dynamodb.DescribeTableInput{TableName: &table}, 30e9); err != nil {
		t.Fatal(err)
	}
	in := &dynamodb.QueryInput{TableName: &table, IndexName: aws.String("by-exp"), Limit: aws.Int32(2),
		KeyConditionExpression:    aws.String("#b = :b AND #e < :now"),
		ExpressionAttributeNames:  map[string]string{"#b": "b", "#e": "exp"},
		ExpressionAttributeValues: av{":b": s("0"), ":now": n("50")}}
	var got []string
	for {
		out, err := c.Query(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range out.Items {
			got = append(got, it["exp"].(*types.AttributeValueMemberN).Value)
		}
		if out.LastEvaluatedKey == nil {
			break
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
	if strings.Join(got, ",") != "-1,9,10,20" {
		t.Errorf("the index read %v, want -1,9,10,20 (numbers by value, 100 excluded)", got)
	}
	_, err = c.Query(ctx, &dynamodb.QueryInput{TableName: &table, IndexName: aws.String("by-exp"), ConsistentRead: aws.Bool(true),
		KeyConditionExpression: aws.String("b = :b"), ExpressionAttributeValues: av{":b": s("0")}})
	if apiErrorCode(err) != "ValidationException" {
		t.Errorf("a consistent read of a global index: err = %v, want ValidationException", err)
	}
}

func TestTimeToLiveSettingsAreRecordedAndValidated(t *testing.T) {
	c, table := fixture(t, "")
	ctx := context.Background()
	set := func(on bool) error {
		_, err := c.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{TableName: &table,
			TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String("exp"), Enabled: aws.Bool(on)}})
		return err
	}
	if err := set(true); err != nil {
		t.Fatal(err)
	}
	out, err := c.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: &table})
	if err != nil || out.TimeToLiveDescription.TimeToLiveStatus != types.TimeToLiveStatusEnabled || aws.ToString(out.TimeToLiveDescription.AttributeName) != "exp" {
		t.Fatalf("DescribeTimeToLive = %+v, %v; want ENABLED on exp", out, err)
	}
	if err := set(false); err != nil {
		t.Fatal(err)
	}
	out, err = c.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: &table})
	if err != nil || out.TimeToLiveDescription.TimeToLiveStatus != types.TimeToLiveStatusDisabled {
		t.Fatalf("DescribeTimeToLive = %+v, %v; want DISABLED", out, err)
	}
}

// Embedded-only: moto accepts a second enabling and names its error
// ResourceNotFound.
func TestTimeToLiveChangesAreValidatedAsDynamoDBValidatesThem(t *testing.T) {
	c := embedded(t).Client
	ctx := context.Background()
	createTable(t, c, "ttl", "")
	set := func(table string, on bool) error {
		_, err := c.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{TableName: &table,
			TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String("exp"), Enabled: aws.Bool(on)}})
		return err
	}
	if err := set("ttl", false); apiErrorCode(err) != "ValidationException" {
		t.Errorf("disabling a disabled TTL: err = %v, want ValidationException", err)
	}
	if err := set("ttl", true); err != nil {
		t.Fatal(err)
	}
	if err := set("ttl", true); apiErrorCode(err) != "ValidationException" {
		t.Errorf("enabling twice: err = %v, want ValidationException", err)
	}
	if err := set("missing", true); apiErrorCode(err) != "ResourceNotFoundException" {
		t.Errorf("missing table: err = %v, want ResourceNotFoundException", err)
	}
}

// moto ignores ClientRequestToken, so this test forces the emulator.
func TestRepeatedClientRequestTokenIsNotAppliedAgainUntilTheWindowEnds(t *testing.T) {
	now := ddbtest.NewClock(time.Unix(1_800_000_000, 0))
	ep := embedded(t, func(o *Options) { o.Now = now.Now })
	c := ep.Client
	createTable(t, c, "tok", "")
	add := func(token, by string) error {
		return transact(c, token, types.TransactWriteItem{Update: &types.Update{TableName: aws.String("tok"), Key: av{"pk": s("a")},
			UpdateExpression: aws.String("ADD v :d"), ExpressionAttributeValues: av{":d": n(by)}}})
	}
	for range 2 {
		if err := add("t1", "1"); err != nil {
			t.Fatal(err)
		}
	}
	if got := getNumber(t, c, "tok", "a", "v"); got != "1" {
		t.Errorf("v = %s after a repeat, want 1", got)
	}
	if err := add("t1", "5"); apiErrorCode(err) != "IdempotentParameterMismatchException" {
		t.Errorf("same token, other parameters: err = %v", err)
	}
	now.Advance(clientRequestTokenWindow)
	if err := add("t1", "1"); err != nil || getNumber(t, c, "tok", "a", "v") != "2" {
		t.Errorf("after the window: err = %v, v = %s; want applied again", err, getNumber(t, c, "tok", "a", "v"))
	}
}

// The emulator's capacity estimates, which the sweeper's reports and the
// index cost tests read; moto reports other figures.
func TestConsumedCapacityFollowsDynamoDBsSizingRules(t *testing.T) {
	c := embedded(t).Client
	ctx := context.Background()
	createTable(t, c, "cap", "")
	big := s(strings.Repeat("x", 5000)) // with "pk", "a" and "big": a 5,005-byte item
	out, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("cap"), Item: av{"pk": s("a"), "big": big}, ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal})
	if err != nil || aws.ToFloat64(out.ConsumedCapacity.CapacityUnits) != 5 {
		t.Fatalf("PutItem of 5,005 bytes = %+v, %v; want 5 write units", out.ConsumedCapacity, err)
	}
	get, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("cap"), Key: av{"pk": s("a")}, ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal})
	if err != nil || aws.ToFloat64(get.ConsumedCapacity.CapacityUnits) != 1 {
		t.Fatalf("eventually consistent GetItem of 5,005 bytes = %+v, %v; want 1 read unit", get.ConsumedCapacity, err)
	}
	tx, err := c.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
		TransactItems: []types.TransactWriteItem{{Delete: &types.Delete{TableName: aws.String("cap"), Key: av{"pk": s("a")}}}}})
	if err != nil || aws.ToFloat64(tx.ConsumedCapacity[0].CapacityUnits) != 10 {
		t.Fatalf("a transaction's delete of 5,005 bytes = %+v, %v; want 10 write units", tx.ConsumedCapacity, err)
	}
}

func TestUnknownOperationIsAnsweredInDynamoDBsErrorShape(t *testing.T) {
	ep := embedded(t)
	_, err := ep.Client.DescribeContinuousBackups(context.Background(), &dynamodb.DescribeContinuousBackupsInput{TableName: aws.String("t")})
	if apiErrorCode(err) != "UnknownOperationException" {
		t.Fatalf("err = %v, want UnknownOperationException", err)
	}
}

// An index sweep deletes each page's last item before it reads the next
// page from it.
func TestIndexQueryResumesAfterAStartKeyWhoseItemWasDeleted(t *testing.T) {
	ep := ForTest(t)
	c, table := ep.Client, TableName("emu-index")
	ctx := context.Background()
	_, err := c.CreateTable(ctx, &dynamodb.CreateTableInput{TableName: &table, BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("b"), AttributeType: types.ScalarAttributeTypeS}, {AttributeName: aws.String("exp"), AttributeType: types.ScalarAttributeTypeN}},
		KeySchema: []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{IndexName: aws.String("by-exp"),
			KeySchema:  []types.KeySchemaElement{{AttributeName: aws.String("b"), KeyType: types.KeyTypeHash}, {AttributeName: aws.String("exp"), KeyType: types.KeyTypeRange}},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll}}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = c.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: &table}) })
	for i := range 9 {
		putItem(t, c, table, av{"pk": s(fmt.Sprint("k", i)), "b": s("0"), "exp": n(fmt.Sprint(i * 10))})
	}
	in := &dynamodb.QueryInput{TableName: &table, IndexName: aws.String("by-exp"), Limit: aws.Int32(2),
		KeyConditionExpression: aws.String("b = :b"), ExpressionAttributeValues: av{":b": s("0")}}
	read := 0
	for {
		out, err := c.Query(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		read += len(out.Items)
		if out.LastEvaluatedKey == nil {
			break
		}
		for _, it := range out.Items {
			if _, err := c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &table, Key: av{"pk": it["pk"]}}); err != nil {
				t.Fatal(err)
			}
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
	if read != 9 {
		t.Errorf("the query read %d items, want 9", read)
	}
}

func TestUpdateThatChangesOrRemovesAKeyAttributeIsRefused(t *testing.T) {
	c, table := fixture(t, "")
	putItem(t, c, table, av{"pk": s("a")})
	for _, expr := range []string{"REMOVE pk", "SET pk = :b"} {
		in := &dynamodb.UpdateItemInput{TableName: &table, Key: av{"pk": s("a")}, UpdateExpression: aws.String(expr)}
		if strings.Contains(expr, ":b") {
			in.ExpressionAttributeValues = av{":b": s("b")}
		}
		if _, err := c.UpdateItem(context.Background(), in); apiErrorCode(err) != "ValidationException" {
			t.Errorf("%s: err = %v, want ValidationException", expr, err)
		}
	}
}

func TestUpdateRemovesTopLevelAndNestedAttributes(t *testing.T) {
	c, table := fixture(t, "")
	ctx := context.Background()
	putItem(t, c, table, av{"pk": s("a"), "x": n("1"), "m": &types.AttributeValueMemberM{Value: av{"y": n("2"), "z": n("3")}}})
	if _, err := c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: &table, Key: av{"pk": s("a")}, UpdateExpression: aws.String("REMOVE x, m.y")}); err != nil {
		t.Fatal(err)
	}
	out, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: &table, Key: av{"pk": s("a")}, ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	m, _ := out.Item["m"].(*types.AttributeValueMemberM)
	if _, ok := out.Item["x"]; ok || m == nil || m.Value["y"] != nil || m.Value["z"] == nil {
		t.Errorf("item after REMOVE x, m.y = %v, want pk and m with z only", out.Item)
	}
}

func TestConcurrentConditionalPutsHaveExactlyOneWinner(t *testing.T) {
	c, table := fixture(t, "")
	var wg sync.WaitGroup
	wins := make(chan int, 20)
	for i := range 20 {
		wg.Go(func() {
			_, err := c.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: &table, Item: av{"pk": s("k"), "by": n(fmt.Sprint(i))},
				ConditionExpression: aws.String("attribute_not_exists(pk)")})
			switch {
			case err == nil:
				wins <- i
			case apiErrorCode(err) != "ConditionalCheckFailedException":
				t.Errorf("claim %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	close(wins)
	var won []int
	for i := range wins {
		won = append(won, i)
	}
	if len(won) != 1 || getNumber(t, c, table, "k", "by") != fmt.Sprint(won[0]) {
		t.Errorf("winners %v, stored by=%s; want one winner, whose item is stored", won, getNumber(t, c, table, "k", "by"))
	}
}

func TestNumbersAreValidatedAsDynamoDBWritesThem(t *testing.T) {
	c, table := fixture(t, "")
	for _, v := range []string{"1", "-1.5", "1e10", "1E-3", ".5", "5.", "0.000"} {
		if _, err := c.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: &table, Item: av{"pk": s("a"), "n": n(v)}}); err != nil {
			t.Errorf("number %q: %v", v, err)
		}
	}
	for _, v := range []string{"", "abc", "1.2.3", "1e", "--1", "0x10"} {
		if _, err := c.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: &table, Item: av{"pk": s("a"), "n": n(v)}}); apiErrorCode(err) != "ValidationException" {
			t.Errorf("number %q: err = %v, want ValidationException", v, err)
		}
	}
}

func TestReservedWordsAreRefusedAsAttributeNamesInExpressions(t *testing.T) {
	c, table := fixture(t, "")
	ctx := context.Background()
	putItem(t, c, table, av{"pk": s("a"), "state": s("x")})
	_, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: &table, Item: av{"pk": s("a")}, ConditionExpression: aws.String("attribute_not_exists(state)")})
	if apiErrorCode(err) != "ValidationException" {
		t.Errorf("condition: err = %v, want ValidationException", err)
	}
	_, err = c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: &table, Key: av{"pk": s("a")}, UpdateExpression: aws.String("SET status = :v"), ExpressionAttributeValues: av{":v": s("x")}})
	if apiErrorCode(err) != "ValidationException" {
		t.Errorf("update: err = %v, want ValidationException", err)
	}
	_, err = c.GetItem(ctx, &dynamodb.GetItemInput{TableName: &table, Key: av{"pk": s("missing")}, ProjectionExpression: aws.String("pk, status")})
	if apiErrorCode(err) != "ValidationException" {
		t.Errorf("projection, even of no item: err = %v, want ValidationException", err)
	}
	out, err := c.Scan(ctx, &dynamodb.ScanInput{TableName: &table, ProjectionExpression: aws.String("pk, #s"), ExpressionAttributeNames: map[string]string{"#s": "state"}})
	if err != nil || len(out.Items) != 1 || out.Items[0]["state"] == nil {
		t.Errorf("projection through a placeholder = %v, %v; want the item's pk and state", out, err)
	}
}
