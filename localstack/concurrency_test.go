package localstack

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// TestConcurrentClientsSeeConsistentResults drives every part of the front
// from several goroutines and clients at once; run it with -race.
func TestConcurrentClientsSeeConsistentResults(t *testing.T) {
	const workers, rounds = 8, 15
	e := embedded(t)
	ctx := context.Background()
	createTable(t, e.Client, "t", "")

	var wg sync.WaitGroup
	for w := range workers {
		c := e.NewClient()
		wg.Go(func() {
			own := fmt.Sprintf("own-%d", w)
			if err := tryCreateTable(c, own, ""); err != nil {
				t.Errorf("worker %d: CreateTable: %v", w, err)
				return
			}
			if _, err := updateTTL(c, own, "expires", true); err != nil {
				t.Errorf("worker %d: UpdateTimeToLive: %v", w, err)
			}
			for r := range rounds {
				// A shared counter, incremented once per round and worker.
				if err := transact(c, fmt.Sprintf("w%d-r%d", w, r), addToCounter("1")); err != nil {
					t.Errorf("worker %d: TransactWriteItems: %v", w, err)
				}
				// Everyone races to create the same item; exactly one wins
				// per round and the losers see the winner's item.
				item := map[string]types.AttributeValue{"pk": s(fmt.Sprintf("race-%d", r)), "v": n(fmt.Sprint(w))}
				_, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("t"), Item: item,
					ConditionExpression: notExists, ReturnValuesOnConditionCheckFailure: allOld})
				var ccf *types.ConditionalCheckFailedException
				if err != nil && (!errors.As(err, &ccf) || itemV(ccf.Item) == "") {
					t.Errorf("worker %d: lost the race without the winner's item: %v", w, err)
				}
				if _, err := c.ListTables(ctx, &dynamodb.ListTablesInput{}); err != nil {
					t.Errorf("worker %d: ListTables: %v", w, err)
				}
				if _, err := c.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(own)}); err != nil {
					t.Errorf("worker %d: Scan: %v", w, err)
				}
			}
			// Repeating the first transaction must not apply it again.
			if err := transact(c, fmt.Sprintf("w%d-r0", w), addToCounter("1")); err != nil {
				t.Errorf("worker %d: repeated TransactWriteItems: %v", w, err)
			}
		})
	}
	wg.Wait()

	if got, want := getNumber(t, e.Client, "t", "a", "v"), fmt.Sprint(workers*rounds); got != want {
		t.Errorf("counter = %s, want %s", got, want)
	}
	out, err := e.Client.ListTables(ctx, &dynamodb.ListTablesInput{})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.TableNames) != workers+1 {
		t.Errorf("ListTables = %v, want %d tables", out.TableNames, workers+1)
	}
}
