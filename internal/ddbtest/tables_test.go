package ddbtest_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkey/idemkey/internal/ddbtest"
	"github.com/idemkey/idemkey/localstack"
)

// slowTables wraps a real client and plays DynamoDB's asynchronous table
// operations on top of it: the first creating DescribeTable answers of a
// table report CREATING (the real answer with its status rewritten), and
// the first inUse DeleteTable calls are refused with
// ResourceInUseException without being sent, as DynamoDB refuses to
// delete a table that is still being created. deleteErr, when set, fails
// every DeleteTable without sending it.
type slowTables struct {
	*dynamodb.Client
	creating, inUse int
	deleteErr       error
	// repeatCreate sends each CreateTable twice and reports the second
	// answer, as the SDK's retry after a lost response does.
	repeatCreate bool

	mu                 sync.Mutex
	describes, deletes int
}

func (c *slowTables) DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, o ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	out, err := c.Client.DescribeTable(ctx, in, o...)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.describes++
	if err == nil && c.describes <= c.creating {
		table := *out.Table
		table.TableStatus = types.TableStatusCreating
		out = &dynamodb.DescribeTableOutput{Table: &table}
	}
	return out, err
}

func (c *slowTables) CreateTable(ctx context.Context, in *dynamodb.CreateTableInput, o ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error) {
	if c.repeatCreate {
		_, _ = c.Client.CreateTable(ctx, in, o...)
	}
	return c.Client.CreateTable(ctx, in, o...)
}

func (c *slowTables) DeleteTable(ctx context.Context, in *dynamodb.DeleteTableInput, o ...func(*dynamodb.Options)) (*dynamodb.DeleteTableOutput, error) {
	c.mu.Lock()
	c.deletes++
	n := c.deletes
	c.mu.Unlock()
	switch {
	case c.deleteErr != nil:
		return nil, c.deleteErr
	case n <= c.inUse:
		return nil, &types.ResourceInUseException{Message: aws.String("Attempt to change a resource which is still in use: Table is being created: " + *in.TableName)}
	}
	return c.Client.DeleteTable(ctx, in, o...)
}

func (c *slowTables) counts() (describes, deletes int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.describes, c.deletes
}

// exists reports whether DescribeTable still finds the table.
func exists(t *testing.T, c *dynamodb.Client, name string) bool {
	t.Helper()
	_, err := c.DescribeTable(context.Background(), &dynamodb.DescribeTableInput{TableName: aws.String(name)})
	var notFound *types.ResourceNotFoundException
	if errors.As(err, &notFound) {
		return false
	}
	require.NoError(t, err)
	return true
}

func TestCreateTableReturnsOnlyOnceTheTableIsActive(t *testing.T) {
	ep := localstack.ForTest(t)
	c := &slowTables{Client: ep.Client, creating: 2}
	name := localstack.TableName("ddbtest-active")
	ddbtest.CreateTable(t, c, name, "id")
	describes, _ := c.counts()
	assert.Equal(t, 3, describes, "two answers CREATING, then ACTIVE: the helper waited for ACTIVE")
}

func TestCreateTableOnAnActiveTableCostsOneDescribe(t *testing.T) {
	ep := localstack.ForTest(t)
	c := &slowTables{Client: ep.Client}
	ddbtest.CreateTable(t, c, localstack.TableName("ddbtest-active"), "id")
	describes, _ := c.counts()
	assert.Equal(t, 1, describes, "the waiter's first check is immediate and succeeds")
}

func TestDeleteOnCleanupRetriesATableStillInUse(t *testing.T) {
	ep := localstack.ForTest(t)
	c := &slowTables{Client: ep.Client, inUse: 2}
	name := localstack.TableName("ddbtest-inuse")
	t.Run("uses the table", func(t *testing.T) {
		ddbtest.CreateTable(t, c, name, "id")
	})
	_, deletes := c.counts()
	assert.Equal(t, 3, deletes, "refused twice as in use, then deleted")
	assert.False(t, exists(t, ep.Client, name), "the table is gone")
}

func TestDeleteOnCleanupOfATableAlreadyGoneIsNoError(t *testing.T) {
	ep := localstack.ForTest(t)
	rec := &recordingTB{TB: t}
	ddbtest.DeleteOnCleanup(rec, ep.Client, localstack.TableName("ddbtest-never-created"))
	rec.runCleanups()
	assert.Empty(t, rec.errors)
}

// recordingTB is a testing.TB whose cleanups run when runCleanups is
// called and whose errors are recorded instead of failing the test.
type recordingTB struct {
	testing.TB
	cleanups []func()
	errors   []string
}

func (r *recordingTB) Cleanup(f func()) { r.cleanups = append(r.cleanups, f) }
func (r *recordingTB) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}
func (r *recordingTB) Helper() {}

func (r *recordingTB) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	runtime.Goexit()
}

// run calls f with r on a goroutine of its own, as a test runs, so that
// Fatalf stops f only.
func (r *recordingTB) run(f func(testing.TB)) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
}

func (r *recordingTB) runCleanups() {
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
}

func TestTableThatCouldNotBeDeletedFailsTheTestAndIsNamed(t *testing.T) {
	ep := localstack.ForTest(t)
	name := localstack.TableName("ddbtest-leak")
	ddbtest.CreateTable(t, ep.Client, name, "id") // the real cleanup, registered first, runs last
	denied := errors.New("AccessDeniedException: not authorized to perform dynamodb:DeleteTable")
	rec := &recordingTB{TB: t}
	ddbtest.DeleteOnCleanup(rec, &slowTables{Client: ep.Client, deleteErr: denied}, name)
	rec.runCleanups()
	require.Len(t, rec.errors, 1, "a leaked table fails the test")
	assert.Contains(t, rec.errors[0], name)
	assert.Contains(t, rec.errors[0], "AccessDeniedException")
	assert.True(t, strings.Contains(rec.errors[0], "NOT deleted"), rec.errors[0])
	assert.True(t, exists(t, ep.Client, name), "the failed delete really left the table")
}

func TestCreateTableRetriedAfterItsFirstAttemptAppliedSucceeds(t *testing.T) {
	ep := localstack.ForTest(t)
	name := localstack.TableName("ddbtest-retried")
	rec := &recordingTB{TB: t}
	rec.run(func(tb testing.TB) {
		ddbtest.CreateTable(tb, &slowTables{Client: ep.Client, repeatCreate: true}, name, "id")
	})
	assert.Empty(t, rec.errors, "the second attempt found the table the first created")
	assert.True(t, exists(t, ep.Client, name))
	rec.runCleanups()
	assert.False(t, exists(t, ep.Client, name), "and it is deleted")
}

func TestCreateTableOfATableThatAlreadyExistedFailsTheTest(t *testing.T) {
	ep := localstack.ForTest(t)
	name := localstack.TableName("ddbtest-taken")
	ddbtest.CreateTable(t, ep.Client, name, "id")
	rec := &recordingTB{TB: t}
	rec.run(func(tb testing.TB) { ddbtest.CreateTable(tb, ep.Client, name, "id") })
	require.Len(t, rec.errors, 1)
	assert.Contains(t, rec.errors[0], "creating table "+name)
}
