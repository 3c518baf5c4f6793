package txn_test

import (
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkey/idemkey/txn"
)

// A handler stages its writes on the Tx it finds in its context
// (txn.FromContext) instead of calling DynamoDB: the front door commits
// them after the handler returns, in one TransactWriteItems with the key
// record. Here a Tx is made directly to show what staging records.
func ExampleTx() {
	tx := txn.New()
	tx.Put(types.Put{
		TableName:           aws.String("payments"),
		Item:                map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: "pay_1"}},
		ConditionExpression: aws.String("attribute_not_exists(id)"),
	})
	tx.Update(types.Update{
		TableName:                 aws.String("balances"),
		Key:                       map[string]types.AttributeValue{"account": &types.AttributeValueMemberS{Value: "acct_9"}},
		UpdateExpression:          aws.String("ADD balance :amount"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":amount": &types.AttributeValueMemberN{Value: "-1250"}},
	})
	for _, item := range tx.Items() {
		switch {
		case item.Put != nil:
			fmt.Println("put", *item.Put.TableName)
		case item.Update != nil:
			fmt.Println("update", *item.Update.TableName)
		}
	}
	fmt.Println("staged", tx.Len(), "of at most", txn.MaxActions-1)
	// Output:
	// put payments
	// update balances
	// staged 2 of at most 99
}
