package localstack

// These tests pin down the gaps of bare minidyn (no front) that the front
// exists to close, through the real SDK client over HTTP. When a minidyn
// upgrade closes a gap, its test here fails: then the matching part of the
// front can go.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
)

func TestBareMinidynIgnoresAllOldOnPutAndDeleteButNotUpdate(t *testing.T) {
	ctx := context.Background()
	c := bareMinidyn(t)
	createTable(t, c, "t", "")
	putItem(t, c, "t", map[string]types.AttributeValue{"pk": s("a"), "v": n("1")})
	key := map[string]types.AttributeValue{"pk": s("a")}
	cond := aws.String("attribute_not_exists(pk)")
	all := types.ReturnValuesOnConditionCheckFailureAllOld

	_, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("t"), Item: key, ConditionExpression: cond, ReturnValuesOnConditionCheckFailure: all})
	if item := conditionItem(t, err); len(item) != 0 {
		t.Errorf("PutItem: minidyn now returns Item %v", item)
	}
	_, err = c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String("t"), Key: key, ConditionExpression: cond, ReturnValuesOnConditionCheckFailure: all})
	if item := conditionItem(t, err); len(item) != 0 {
		t.Errorf("DeleteItem: minidyn now returns Item %v", item)
	}
	_, err = c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String("t"), Key: key, UpdateExpression: aws.String("SET v = :v"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":v": n("2")}, ConditionExpression: cond, ReturnValuesOnConditionCheckFailure: all})
	if item := conditionItem(t, err); len(item) == 0 {
		t.Errorf("UpdateItem: minidyn no longer returns Item")
	}
}

func TestBareMinidynIgnoresAllOldOnTransactPutAndDeleteButNotUpdateOrConditionCheck(t *testing.T) {
	c := bareMinidyn(t)
	createTable(t, c, "t", "")
	putItem(t, c, "t", map[string]types.AttributeValue{"pk": s("a"), "v": n("1")})
	key := map[string]types.AttributeValue{"pk": s("a")}
	cond := aws.String("attribute_not_exists(pk)")
	all := types.ReturnValuesOnConditionCheckFailureAllOld
	for _, tc := range []struct {
		name     string
		action   types.TransactWriteItem
		wantItem bool
	}{
		{"Put", types.TransactWriteItem{Put: &types.Put{TableName: aws.String("t"), Item: key, ConditionExpression: cond, ReturnValuesOnConditionCheckFailure: all}}, false},
		{"Delete", types.TransactWriteItem{Delete: &types.Delete{TableName: aws.String("t"), Key: key, ConditionExpression: cond, ReturnValuesOnConditionCheckFailure: all}}, false},
		{"Update", types.TransactWriteItem{Update: &types.Update{TableName: aws.String("t"), Key: key, UpdateExpression: aws.String("SET v = :v"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":v": n("2")}, ConditionExpression: cond, ReturnValuesOnConditionCheckFailure: all}}, true},
		{"ConditionCheck", types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{TableName: aws.String("t"), Key: key, ConditionExpression: cond, ReturnValuesOnConditionCheckFailure: all}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reasons := cancellationReasons(t, transact(c, "", tc.action))
			if got := len(reasons[0].Item) > 0; got != tc.wantItem {
				t.Errorf("reason has Item: %v, want %v (minidyn changed)", got, tc.wantItem)
			}
		})
	}
}

func TestBareMinidynReportsOnlyTheFirstFailedConditionOfATransaction(t *testing.T) {
	c := bareMinidyn(t)
	createTable(t, c, "t", "")
	putItem(t, c, "t", map[string]types.AttributeValue{"pk": s("a")})
	putItem(t, c, "t", map[string]types.AttributeValue{"pk": s("b")})
	cond := aws.String("attribute_not_exists(pk)")
	reasons := cancellationReasons(t, transact(c, "",
		types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{TableName: aws.String("t"), Key: map[string]types.AttributeValue{"pk": s("a")}, ConditionExpression: cond}},
		types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{TableName: aws.String("t"), Key: map[string]types.AttributeValue{"pk": s("b")}, ConditionExpression: cond}},
	))
	if got := []string{aws.ToString(reasons[0].Code), aws.ToString(reasons[1].Code)}; got[0] != "ConditionalCheckFailed" || got[1] != "None" {
		t.Errorf("reason codes = %v, want [ConditionalCheckFailed None] (minidyn changed)", got)
	}
}

func TestBareMinidynAnswersTTLAndListTablesWithUndecodablePlainText(t *testing.T) {
	ctx := context.Background()
	c := bareMinidyn(t)
	createTable(t, c, "t", "")
	errs := map[string]error{}
	_, errs["UpdateTimeToLive"] = c.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{TableName: aws.String("t"),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String("ttl"), Enabled: aws.Bool(true)}})
	_, errs["DescribeTimeToLive"] = c.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String("t")})
	_, errs["ListTables"] = c.ListTables(ctx, &dynamodb.ListTablesInput{})
	for op, err := range errs {
		var apiErr smithy.APIError
		if err == nil || errors.As(err, &apiErr) {
			t.Errorf("%s: err = %v, want an undecodable (non-API) error", op, err)
		}
	}
}

func TestBareMinidynIgnoresClientRequestToken(t *testing.T) {
	c := bareMinidyn(t)
	createTable(t, c, "t", "")
	add := types.TransactWriteItem{Update: &types.Update{TableName: aws.String("t"), Key: map[string]types.AttributeValue{"pk": s("a")},
		UpdateExpression: aws.String("ADD v :one"), ExpressionAttributeValues: map[string]types.AttributeValue{":one": n("1")}}}
	for range 2 {
		if err := transact(c, "same-token", add); err != nil {
			t.Fatal(err)
		}
	}
	if got := getNumber(t, c, "t", "a", "v"); got != "2" {
		t.Errorf("v = %s after two calls with one token, want 2 (minidyn changed)", got)
	}
}

func TestBareMinidynLeavesScannedCountZeroAndIgnoresSelectCount(t *testing.T) {
	ctx := context.Background()
	c := bareMinidyn(t)
	createTable(t, c, "t", "")
	putItem(t, c, "t", map[string]types.AttributeValue{"pk": s("a")})
	out, err := c.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String("t"), Select: types.SelectCount})
	if err != nil {
		t.Fatal(err)
	}
	if out.Count != 1 || out.ScannedCount != 0 || len(out.Items) != 1 {
		t.Errorf("Count, ScannedCount, len(Items) = %d, %d, %d; want 1, 0, 1 (minidyn changed)", out.Count, out.ScannedCount, len(out.Items))
	}
}

func TestBareMinidynDescribesTablesWithoutTableStatus(t *testing.T) {
	c := bareMinidyn(t)
	createTable(t, c, "t", "")
	out, err := c.DescribeTable(context.Background(), &dynamodb.DescribeTableInput{TableName: aws.String("t")})
	if err != nil {
		t.Fatal(err)
	}
	if out.Table.TableStatus != "" {
		t.Errorf("TableStatus = %q, want empty (minidyn changed)", out.Table.TableStatus)
	}
}

func TestBareMinidynLosesTheTypeOfEmptyListsMapsAndBinaries(t *testing.T) {
	c := bareMinidyn(t)
	createTable(t, c, "t", "")
	putItem(t, c, "t", map[string]types.AttributeValue{"pk": s("a"),
		"l": &types.AttributeValueMemberL{Value: []types.AttributeValue{}},
		"m": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{}},
		"b": &types.AttributeValueMemberB{Value: []byte{}}})
	out, err := c.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String("t"), Key: map[string]types.AttributeValue{"pk": s("a")}})
	if err != nil {
		t.Fatal(err)
	}
	for _, attr := range []string{"l", "m", "b"} {
		if v, ok := out.Item[attr]; !ok || v != nil {
			t.Errorf("%s = %#v (present: %v), want a nil value (minidyn changed)", attr, v, ok)
		}
	}
}

// TestBareMinidynRacesOnTableOperations is not run by default: it exists to
// show, under -race, why the front serialises everything (minidyn runs
// CreateTable without its lock). Run it with LOCALSTACK_SHOW_MINIDYN_RACE=1.
func TestBareMinidynRacesOnTableOperations(t *testing.T) {
	if testingEnv("LOCALSTACK_SHOW_MINIDYN_RACE") == "" {
		t.Skip("set LOCALSTACK_SHOW_MINIDYN_RACE=1 and use -race to see minidyn's data race")
	}
	c := bareMinidyn(t)
	createTable(t, c, "t", "")
	var wg sync.WaitGroup
	for i := range 10 {
		wg.Go(func() { _ = tryCreateTable(c, fmt.Sprintf("x%d", i), "") })
		wg.Go(func() { getNumber(t, c, "t", "a", "v") })
	}
	wg.Wait()
}

func TestBareMinidynPutItemReturnsTheNewItemWhateverReturnValues(t *testing.T) {
	ctx := context.Background()
	c := bareMinidyn(t)
	createTable(t, c, "t", "")
	for _, tc := range []struct {
		rv   types.ReturnValue
		v    string
		want string
	}{{"", "1", "1"}, {types.ReturnValueAllOld, "2", "2"}} {
		out, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("t"), ReturnValues: tc.rv,
			Item: map[string]types.AttributeValue{"pk": s("a"), "v": n(tc.v)}})
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := out.Attributes["v"].(*types.AttributeValueMemberN); got == nil || got.Value != tc.want {
			t.Errorf("ReturnValues %q: Attributes = %v, want the new item with v %s (minidyn changed)", tc.rv, out.Attributes, tc.want)
		}
	}
}

func TestBareMinidynIgnoresScanSegments(t *testing.T) {
	c := bareMinidyn(t)
	createTable(t, c, "t", "")
	for i := range 8 {
		putItem(t, c, "t", map[string]types.AttributeValue{"pk": s(fmt.Sprint(i))})
	}
	for _, seg := range []int32{0, 1, 5} {
		out, err := c.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String("t"), Segment: aws.Int32(seg), TotalSegments: aws.Int32(2)})
		if err != nil {
			t.Fatalf("segment %d of 2: %v (minidyn changed)", seg, err)
		}
		if out.Count != 8 {
			t.Errorf("segment %d of 2: Count = %d, want 8, the whole table (minidyn changed)", seg, out.Count)
		}
	}
}

func TestBareMinidynEndsAScanAtAStartKeyWhoseItemWasDeleted(t *testing.T) {
	ctx := context.Background()
	c := bareMinidyn(t)
	createTable(t, c, "t", "")
	for i := range 8 {
		putItem(t, c, "t", map[string]types.AttributeValue{"pk": s(fmt.Sprint(i))})
	}
	page, err := c.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String("t"), Limit: aws.Int32(3)})
	if err != nil || page.LastEvaluatedKey == nil {
		t.Fatalf("first page: LastEvaluatedKey %v, err %v", page.LastEvaluatedKey, err)
	}
	if _, err := c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String("t"), Key: page.LastEvaluatedKey}); err != nil {
		t.Fatal(err)
	}
	rest, err := c.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String("t"), ExclusiveStartKey: page.LastEvaluatedKey})
	if err != nil {
		t.Fatal(err)
	}
	if rest.Count != 0 || rest.LastEvaluatedKey != nil {
		t.Errorf("Count, LastEvaluatedKey = %d, %v; want 0, none: the scan ends (minidyn changed)", rest.Count, rest.LastEvaluatedKey)
	}
}
