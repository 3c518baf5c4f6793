package localstack

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

func listTables(t *testing.T, c *dynamodb.Client, in *dynamodb.ListTablesInput) *dynamodb.ListTablesOutput {
	t.Helper()
	out, err := c.ListTables(context.Background(), in)
	if err != nil {
		t.Fatalf("ListTables: %v", err)
	}
	return out
}

func TestListTablesReturnsAnEmptyListWithoutTables(t *testing.T) {
	out := listTables(t, embedded(t).Client, &dynamodb.ListTablesInput{})
	if len(out.TableNames) != 0 || out.LastEvaluatedTableName != nil {
		t.Errorf("got %v, %v; want no tables and no LastEvaluatedTableName", out.TableNames, aws.ToString(out.LastEvaluatedTableName))
	}
}

func TestListTablesListsCreatedTablesByName(t *testing.T) {
	c := embedded(t).Client
	for _, name := range []string{"charlie", "alpha", "bravo"} {
		createTable(t, c, name, "")
	}
	out := listTables(t, c, &dynamodb.ListTablesInput{})
	if want := []string{"alpha", "bravo", "charlie"}; !slices.Equal(out.TableNames, want) || out.LastEvaluatedTableName != nil {
		t.Errorf("got %v, %v; want %v and no LastEvaluatedTableName", out.TableNames, aws.ToString(out.LastEvaluatedTableName), want)
	}
}

func TestListTablesPagesWithLimitAndExclusiveStartTableName(t *testing.T) {
	c := embedded(t).Client
	var want []string
	for i := range 5 {
		name := fmt.Sprintf("table-%d", i)
		createTable(t, c, name, "")
		want = append(want, name)
	}
	out := listTables(t, c, &dynamodb.ListTablesInput{Limit: aws.Int32(2)})
	if !slices.Equal(out.TableNames, want[:2]) || aws.ToString(out.LastEvaluatedTableName) != "table-1" {
		t.Errorf("first page = %v, %v; want %v, table-1", out.TableNames, aws.ToString(out.LastEvaluatedTableName), want[:2])
	}
	out = listTables(t, c, &dynamodb.ListTablesInput{Limit: aws.Int32(3), ExclusiveStartTableName: aws.String("table-1")})
	if !slices.Equal(out.TableNames, want[2:]) || out.LastEvaluatedTableName != nil {
		t.Errorf("last page = %v, %v; want %v and no LastEvaluatedTableName", out.TableNames, aws.ToString(out.LastEvaluatedTableName), want[2:])
	}

	var all []string
	p := dynamodb.NewListTablesPaginator(c, &dynamodb.ListTablesInput{Limit: aws.Int32(2)})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, page.TableNames...)
	}
	if !slices.Equal(all, want) {
		t.Errorf("paginator = %v, want %v", all, want)
	}
}

func TestListTablesOmitsDeletedTables(t *testing.T) {
	c := embedded(t).Client
	createTable(t, c, "kept", "")
	createTable(t, c, "gone", "")
	if _, err := c.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String("gone")}); err != nil {
		t.Fatal(err)
	}
	if got := listTables(t, c, &dynamodb.ListTablesInput{}).TableNames; !slices.Equal(got, []string{"kept"}) {
		t.Errorf("got %v, want [kept]", got)
	}
}

func TestListTablesRejectsLimitOutsideOneToHundred(t *testing.T) {
	c := embedded(t).Client
	for _, limit := range []int32{0, 101} {
		_, err := c.ListTables(context.Background(), &dynamodb.ListTablesInput{Limit: aws.Int32(limit)})
		wantValidation(t, err, fmt.Sprintf("Value '%d' at 'limit' failed to satisfy constraint", limit))
	}
}

func TestDisableListTablesLeavesTheOperationUnsupported(t *testing.T) {
	c := embedded(t, func(o *Options) { o.DisableListTables = true }).Client
	_, err := c.ListTables(context.Background(), &dynamodb.ListTablesInput{})
	if code := apiErrorCode(err); code != "UnknownOperationException" {
		t.Errorf("err = %v, want UnknownOperationException", err)
	}
}

func TestTableDescriptionsCarryTableStatusSoWaitersFinish(t *testing.T) {
	c := embedded(t).Client
	ctx := context.Background()
	out, err := c.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String("t"),
		BillingMode:          types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := out.TableDescription.TableStatus; got != types.TableStatusActive {
		t.Errorf("CreateTable: TableStatus = %q, want ACTIVE", got)
	}
	start := time.Now()
	if err := dynamodb.NewTableExistsWaiter(c).Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("t")}, 5*time.Second); err != nil {
		t.Errorf("TableExistsWaiter: %v", err)
	}
	del, err := c.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String("t")})
	if err != nil {
		t.Fatal(err)
	}
	if got := del.TableDescription.TableStatus; got != types.TableStatusDeleting {
		t.Errorf("DeleteTable: TableStatus = %q, want DELETING", got)
	}
	if err := dynamodb.NewTableNotExistsWaiter(c).Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("t")}, 5*time.Second); err != nil {
		t.Errorf("TableNotExistsWaiter: %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("waiters took %v, want no retry delay", d)
	}
}

func TestDisableTableStatusLeavesTableStatusEmpty(t *testing.T) {
	c := embedded(t, func(o *Options) { o.DisableTableStatus = true }).Client
	createTable(t, c, "t", "")
	out, err := c.DescribeTable(context.Background(), &dynamodb.DescribeTableInput{TableName: aws.String("t")})
	if err != nil {
		t.Fatal(err)
	}
	if got := out.Table.TableStatus; got != "" {
		t.Errorf("TableStatus = %q, want empty", got)
	}
	// Tables are still tracked for ListTables.
	if got := listTables(t, c, &dynamodb.ListTablesInput{}).TableNames; !slices.Equal(got, []string{"t"}) {
		t.Errorf("ListTables = %v, want [t]", got)
	}
}
