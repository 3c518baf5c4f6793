package localstack

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

var (
	allOld       = types.ReturnValuesOnConditionCheckFailureAllOld
	notExists    = aws.String("attribute_not_exists(pk)")
	exists       = aws.String("attribute_exists(pk)")
	setV         = aws.String("SET v = :v")
	setVValues   = map[string]types.AttributeValue{":v": n("99")}
	keyA         = map[string]types.AttributeValue{"pk": s("a")}
	storedItemA  = map[string]types.AttributeValue{"pk": s("a"), "v": n("1")}
	replacementA = map[string]types.AttributeValue{"pk": s("a"), "v": n("2")}
)

// itemV returns the number attribute v of item, or "" when it has none.
func itemV(item map[string]types.AttributeValue) string {
	if v, ok := item["v"].(*types.AttributeValueMemberN); ok {
		return v.Value
	}
	return ""
}

// singleWrites returns a PutItem, UpdateItem and DeleteItem on item "a" with
// the given condition and ReturnValuesOnConditionCheckFailure.
func singleWrites(c *dynamodb.Client, cond *string, rv types.ReturnValuesOnConditionCheckFailure) map[string]func() error {
	ctx := context.Background()
	return map[string]func() error{
		"PutItem": func() error {
			_, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("t"), Item: replacementA, ConditionExpression: cond, ReturnValuesOnConditionCheckFailure: rv})
			return err
		},
		"UpdateItem": func() error {
			_, err := c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String("t"), Key: keyA, UpdateExpression: setV, ExpressionAttributeValues: setVValues, ConditionExpression: cond, ReturnValuesOnConditionCheckFailure: rv})
			return err
		},
		"DeleteItem": func() error {
			_, err := c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String("t"), Key: keyA, ConditionExpression: cond, ReturnValuesOnConditionCheckFailure: rv})
			return err
		},
	}
}

// transactActions returns a Put, Update, Delete and ConditionCheck action on
// item "a" with the given condition and ReturnValuesOnConditionCheckFailure.
func transactActions(cond *string, rv types.ReturnValuesOnConditionCheckFailure) map[string]types.TransactWriteItem {
	return map[string]types.TransactWriteItem{
		"Put":            {Put: &types.Put{TableName: aws.String("t"), Item: replacementA, ConditionExpression: cond, ReturnValuesOnConditionCheckFailure: rv}},
		"Update":         {Update: &types.Update{TableName: aws.String("t"), Key: keyA, UpdateExpression: setV, ExpressionAttributeValues: setVValues, ConditionExpression: cond, ReturnValuesOnConditionCheckFailure: rv}},
		"Delete":         {Delete: &types.Delete{TableName: aws.String("t"), Key: keyA, ConditionExpression: cond, ReturnValuesOnConditionCheckFailure: rv}},
		"ConditionCheck": {ConditionCheck: &types.ConditionCheck{TableName: aws.String("t"), Key: keyA, ConditionExpression: cond, ReturnValuesOnConditionCheckFailure: rv}},
	}
}

func TestConditionFailureWithAllOldReturnsTheStoredItem(t *testing.T) {
	c := embedded(t).Client
	createTable(t, c, "t", "")
	putItem(t, c, "t", storedItemA)
	for op, write := range singleWrites(c, notExists, allOld) {
		t.Run(op, func(t *testing.T) {
			item := conditionItem(t, write())
			if itemV(item) != "1" || len(item) != 2 {
				t.Errorf("Item = %v, want the stored item {pk: a, v: 1}", item)
			}
			if got := getNumber(t, c, "t", "a", "v"); got != "1" {
				t.Errorf("stored v = %q after the failed write, want 1", got)
			}
		})
	}
}

func TestConditionFailureWithoutAllOldReturnsNoItem(t *testing.T) {
	c := embedded(t).Client
	createTable(t, c, "t", "")
	putItem(t, c, "t", storedItemA)
	for name, rv := range map[string]types.ReturnValuesOnConditionCheckFailure{"unset": "", "NONE": types.ReturnValuesOnConditionCheckFailureNone} {
		for op, write := range singleWrites(c, notExists, rv) {
			t.Run(op+"/"+name, func(t *testing.T) {
				if item := conditionItem(t, write()); item != nil {
					t.Errorf("Item = %v, want none", item)
				}
			})
		}
	}
}

func TestConditionFailureOnAnAbsentItemReturnsNoItem(t *testing.T) {
	c := embedded(t).Client
	createTable(t, c, "t", "")
	for op, write := range singleWrites(c, exists, allOld) {
		t.Run(op, func(t *testing.T) {
			if item := conditionItem(t, write()); item != nil {
				t.Errorf("Item = %v, want none for an absent item", item)
			}
		})
	}
}

func TestPutItemConditionFailureFindsTheOldItemByCompositeKey(t *testing.T) {
	c := embedded(t).Client
	createTable(t, c, "t", "sk")
	putItem(t, c, "t", map[string]types.AttributeValue{"pk": s("a"), "sk": s("1"), "v": n("1")})
	putItem(t, c, "t", map[string]types.AttributeValue{"pk": s("a"), "sk": s("2"), "v": n("2")})
	_, err := c.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String("t"),
		Item:                map[string]types.AttributeValue{"pk": s("a"), "sk": s("2"), "v": n("3")},
		ConditionExpression: notExists, ReturnValuesOnConditionCheckFailure: allOld})
	if item := conditionItem(t, err); itemV(item) != "2" {
		t.Errorf("Item = %v, want the item with sk 2 and v 2", item)
	}
}

func TestTransactionCancellationWithAllOldReturnsTheStoredItemForEachActionKind(t *testing.T) {
	c := embedded(t).Client
	createTable(t, c, "t", "")
	putItem(t, c, "t", storedItemA)
	for kind, action := range transactActions(notExists, allOld) {
		t.Run(kind, func(t *testing.T) {
			reasons := cancellationReasons(t, transact(c, "", action))
			if len(reasons) != 1 || aws.ToString(reasons[0].Code) != "ConditionalCheckFailed" || itemV(reasons[0].Item) != "1" {
				t.Errorf("reasons = %+v, want one ConditionalCheckFailed with the stored item", reasons)
			}
		})
	}
}

func TestTransactionCancellationAddsItemOnlyToTheFailedActionThatAskedForIt(t *testing.T) {
	c := embedded(t).Client
	createTable(t, c, "t", "")
	putItem(t, c, "t", storedItemA)
	putItem(t, c, "t", map[string]types.AttributeValue{"pk": s("b"), "v": n("7")})
	// Action 0 passes (and is rolled back), action 1 fails.
	reasons := cancellationReasons(t, transact(c, "",
		types.TransactWriteItem{Update: &types.Update{TableName: aws.String("t"), Key: map[string]types.AttributeValue{"pk": s("b")},
			UpdateExpression: setV, ExpressionAttributeValues: setVValues, ConditionExpression: exists, ReturnValuesOnConditionCheckFailure: allOld}},
		types.TransactWriteItem{Put: &types.Put{TableName: aws.String("t"), Item: replacementA, ConditionExpression: notExists, ReturnValuesOnConditionCheckFailure: allOld}},
	))
	if len(reasons) != 2 {
		t.Fatalf("reasons = %+v, want 2", reasons)
	}
	if aws.ToString(reasons[0].Code) != "None" || reasons[0].Item != nil {
		t.Errorf("reason 0 = %+v, want None without Item", reasons[0])
	}
	if aws.ToString(reasons[1].Code) != "ConditionalCheckFailed" || itemV(reasons[1].Item) != "1" {
		t.Errorf("reason 1 = %+v, want ConditionalCheckFailed with the stored item", reasons[1])
	}
	if got := getNumber(t, c, "t", "b", "v"); got != "7" {
		t.Errorf("b.v = %q, want 7 (rolled back)", got)
	}
}

func TestTransactionCancellationWithoutAllOldReturnsNoItem(t *testing.T) {
	c := embedded(t).Client
	createTable(t, c, "t", "")
	putItem(t, c, "t", storedItemA)
	for kind, action := range transactActions(notExists, types.ReturnValuesOnConditionCheckFailureNone) {
		t.Run(kind, func(t *testing.T) {
			if reasons := cancellationReasons(t, transact(c, "", action)); reasons[0].Item != nil {
				t.Errorf("Item = %v, want none", reasons[0].Item)
			}
		})
	}
}

func TestDisableReturnOldItemReturnsNoItemEvenWhereMinidynWould(t *testing.T) {
	c := embedded(t, func(o *Options) { o.DisableReturnOldItem = true }).Client
	createTable(t, c, "t", "")
	putItem(t, c, "t", storedItemA)
	// minidyn itself fills Item for UpdateItem, transactional Update and
	// ConditionCheck; the switch removes it there too.
	for op, write := range singleWrites(c, notExists, allOld) {
		t.Run(op, func(t *testing.T) {
			if item := conditionItem(t, write()); item != nil {
				t.Errorf("Item = %v, want none", item)
			}
		})
	}
	for kind, action := range transactActions(notExists, allOld) {
		t.Run("Transact"+kind, func(t *testing.T) {
			if reasons := cancellationReasons(t, transact(c, "", action)); reasons[0].Item != nil {
				t.Errorf("Item = %v, want none", reasons[0].Item)
			}
		})
	}
}

func TestPutItemReturnsTheReplacedItemOnlyForAllOld(t *testing.T) {
	ctx := context.Background()
	c := embedded(t).Client
	createTable(t, c, "t", "")
	for _, step := range []struct {
		rv   types.ReturnValue
		v    string
		want string // v of the returned Attributes, "" for none
	}{
		{types.ReturnValueAllOld, "1", ""}, // nothing replaced
		{types.ReturnValueAllOld, "2", "1"},
		{"", "3", ""},
		{types.ReturnValueNone, "4", ""},
		{types.ReturnValueAllOld, "5", "4"},
	} {
		out, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("t"), ReturnValues: step.rv,
			Item: map[string]types.AttributeValue{"pk": s("a"), "v": n(step.v)}})
		if err != nil {
			t.Fatalf("PutItem v=%s: %v", step.v, err)
		}
		if got := itemV(out.Attributes); got != step.want || (step.want == "" && out.Attributes != nil) {
			t.Errorf("PutItem v=%s ReturnValues %q: Attributes = %v, want v %q", step.v, step.rv, out.Attributes, step.want)
		}
	}
}

func TestDisablePutReturnValuesReturnsTheNewItem(t *testing.T) {
	c := embedded(t, func(o *Options) { o.DisablePutReturnValues = true }).Client
	createTable(t, c, "t", "")
	out, err := c.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String("t"), Item: storedItemA})
	if err != nil {
		t.Fatal(err)
	}
	if itemV(out.Attributes) != "1" {
		t.Errorf("Attributes = %v, want the new item", out.Attributes)
	}
}
