package localstack

import (
	"context"
	"net/http"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

func TestOrdinaryOperationsPassThroughTheFront(t *testing.T) {
	ctx := context.Background()
	c := embedded(t).Client
	createTable(t, c, "t", "sk")
	item := func(sk, v string) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{"pk": s("p"), "sk": s(sk), "v": n(v)}
	}
	key := func(sk string) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{"pk": s("p"), "sk": s(sk)}
	}

	put, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("t"), Item: item("1", "1")})
	if err != nil || put.Attributes != nil {
		t.Fatalf("PutItem: %v, %v", put, err)
	}
	put, err = c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("t"), Item: item("1", "2"), ReturnValues: types.ReturnValueAllOld})
	if err != nil || itemV(put.Attributes) != "1" {
		t.Errorf("PutItem ALL_OLD: Attributes = %v, err = %v; want v 1", put.Attributes, err)
	}
	upd, err := c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String("t"), Key: key("1"),
		UpdateExpression: aws.String("ADD v :one"), ExpressionAttributeValues: map[string]types.AttributeValue{":one": n("1")},
		ConditionExpression: aws.String("attribute_exists(pk)"), ReturnValues: types.ReturnValueAllNew})
	if err != nil || itemV(upd.Attributes) != "3" {
		t.Errorf("UpdateItem ALL_NEW: Attributes = %v, err = %v; want v 3", upd.Attributes, err)
	}

	if _, err := c.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{"t": {
		{PutRequest: &types.PutRequest{Item: item("2", "20")}},
		{PutRequest: &types.PutRequest{Item: item("3", "30")}},
	}}}); err != nil {
		t.Fatalf("BatchWriteItem: %v", err)
	}
	bg, err := c.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{"t": {Keys: []map[string]types.AttributeValue{key("2"), key("3")}}}})
	if err != nil || len(bg.Responses["t"]) != 2 {
		t.Errorf("BatchGetItem: %v items, err = %v; want 2", len(bg.Responses["t"]), err)
	}

	if err := transact(c, "", types.TransactWriteItem{Put: &types.Put{TableName: aws.String("t"), Item: item("4", "40")}},
		types.TransactWriteItem{Delete: &types.Delete{TableName: aws.String("t"), Key: key("3")}}); err != nil {
		t.Fatalf("TransactWriteItems: %v", err)
	}
	tg, err := c.TransactGetItems(ctx, &dynamodb.TransactGetItemsInput{TransactItems: []types.TransactGetItem{
		{Get: &types.Get{TableName: aws.String("t"), Key: key("3")}},
		{Get: &types.Get{TableName: aws.String("t"), Key: key("4")}},
	}})
	if err != nil || len(tg.Responses) != 2 || tg.Responses[0].Item != nil || itemV(tg.Responses[1].Item) != "40" {
		t.Errorf("TransactGetItems: %+v, err = %v; want [none, v 40]", tg, err)
	}

	q, err := c.Query(ctx, &dynamodb.QueryInput{TableName: aws.String("t"), KeyConditionExpression: aws.String("pk = :p"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":p": s("p")}, ScanIndexForward: aws.Bool(false)})
	if err != nil || q.Count != 3 || itemV(q.Items[0]) != "40" {
		t.Errorf("Query: Count %d, err = %v; want 3 items, newest first", q.Count, err)
	}

	del, err := c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String("t"), Key: key("1"), ReturnValues: types.ReturnValueAllOld})
	if err != nil || itemV(del.Attributes) != "3" {
		t.Errorf("DeleteItem ALL_OLD: Attributes = %v, err = %v; want v 3", del.Attributes, err)
	}
	get, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("t"), Key: key("1")})
	if err != nil || get.Item != nil {
		t.Errorf("GetItem after delete: %v, err = %v; want no item", get.Item, err)
	}

	var rnf *types.ResourceNotFoundException
	if _, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("missing"), Key: key("1")}); !asError(err, &rnf) {
		t.Errorf("GetItem on a missing table: err = %v, want ResourceNotFoundException", err)
	}
}

func TestOperationsNeitherFrontNorMinidynKnowFailWithUnknownOperation(t *testing.T) {
	c := embedded(t).Client
	createTable(t, c, "t", "")
	_, err := c.DescribeContinuousBackups(context.Background(), &dynamodb.DescribeContinuousBackupsInput{TableName: aws.String("t")})
	if code := apiErrorCode(err); code != "UnknownOperationException" {
		t.Errorf("err = %v, want UnknownOperationException", err)
	}
}

func TestNonPostRequestsAreRejected(t *testing.T) {
	e := embedded(t)
	resp, err := http.Get(e.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET: status %d, want 405", resp.StatusCode)
	}
}
