package localstack

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

func updateTTL(c *dynamodb.Client, table, attr string, enabled bool) (*dynamodb.UpdateTimeToLiveOutput, error) {
	return c.UpdateTimeToLive(context.Background(), &dynamodb.UpdateTimeToLiveInput{
		TableName:               aws.String(table),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String(attr), Enabled: aws.Bool(enabled)},
	})
}

func describeTTL(t *testing.T, c *dynamodb.Client, table string) *types.TimeToLiveDescription {
	t.Helper()
	out, err := c.DescribeTimeToLive(context.Background(), &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(table)})
	if err != nil {
		t.Fatalf("DescribeTimeToLive: %v", err)
	}
	return out.TimeToLiveDescription
}

// wantValidation fails the test unless err is a ValidationException whose
// message contains msg.
func wantValidation(t *testing.T, err error, msg string) {
	t.Helper()
	if code := apiErrorCode(err); code != "ValidationException" || !strings.Contains(err.Error(), msg) {
		t.Errorf("err = %v, want ValidationException containing %q", err, msg)
	}
}

func TestDescribeTimeToLiveReportsDisabledForANewTable(t *testing.T) {
	c := embedded(t).Client
	createTable(t, c, "t", "")
	d := describeTTL(t, c, "t")
	if d.TimeToLiveStatus != types.TimeToLiveStatusDisabled || d.AttributeName != nil {
		t.Errorf("description = %s %v, want DISABLED without attribute", d.TimeToLiveStatus, aws.ToString(d.AttributeName))
	}
}

func TestUpdateTimeToLiveEnablesAndDescribeTimeToLiveReportsTheAttribute(t *testing.T) {
	c := embedded(t).Client
	createTable(t, c, "t", "")
	out, err := updateTTL(c, "t", "expires", true)
	if err != nil {
		t.Fatal(err)
	}
	spec := out.TimeToLiveSpecification
	if aws.ToString(spec.AttributeName) != "expires" || !aws.ToBool(spec.Enabled) {
		t.Errorf("specification = %v %v, want expires true", aws.ToString(spec.AttributeName), aws.ToBool(spec.Enabled))
	}
	d := describeTTL(t, c, "t")
	if d.TimeToLiveStatus != types.TimeToLiveStatusEnabled || aws.ToString(d.AttributeName) != "expires" {
		t.Errorf("description = %s %v, want ENABLED expires", d.TimeToLiveStatus, aws.ToString(d.AttributeName))
	}
}

func TestUpdateTimeToLiveRejectsEnablingWhenAlreadyEnabled(t *testing.T) {
	c := embedded(t).Client
	createTable(t, c, "t", "")
	if _, err := updateTTL(c, "t", "expires", true); err != nil {
		t.Fatal(err)
	}
	_, err := updateTTL(c, "t", "expires", true)
	wantValidation(t, err, "TimeToLive is already enabled")
	_, err = updateTTL(c, "t", "other", true)
	wantValidation(t, err, "TimeToLive is active on a different AttributeName")
}

func TestUpdateTimeToLiveRejectsDisablingWhenAlreadyDisabled(t *testing.T) {
	c := embedded(t).Client
	createTable(t, c, "t", "")
	_, err := updateTTL(c, "t", "expires", false)
	wantValidation(t, err, "TimeToLive is already disabled")
}

func TestUpdateTimeToLiveRejectsDisablingAnotherAttribute(t *testing.T) {
	c := embedded(t).Client
	createTable(t, c, "t", "")
	if _, err := updateTTL(c, "t", "expires", true); err != nil {
		t.Fatal(err)
	}
	_, err := updateTTL(c, "t", "other", false)
	wantValidation(t, err, "TimeToLive is active on a different AttributeName")
}

func TestUpdateTimeToLiveDisablesAndReenables(t *testing.T) {
	c := embedded(t).Client
	createTable(t, c, "t", "")
	for _, step := range []struct {
		attr    string
		enabled bool
		want    types.TimeToLiveStatus
	}{{"expires", true, "ENABLED"}, {"expires", false, "DISABLED"}, {"other", true, "ENABLED"}} {
		if _, err := updateTTL(c, "t", step.attr, step.enabled); err != nil {
			t.Fatalf("UpdateTimeToLive(%s, %v): %v", step.attr, step.enabled, err)
		}
		if got := describeTTL(t, c, "t").TimeToLiveStatus; got != step.want {
			t.Errorf("after UpdateTimeToLive(%s, %v): status %s, want %s", step.attr, step.enabled, got, step.want)
		}
	}
	if got := aws.ToString(describeTTL(t, c, "t").AttributeName); got != "other" {
		t.Errorf("attribute = %q, want other", got)
	}
}

func TestTimeToLiveOperationsOnAMissingTableFailWithResourceNotFound(t *testing.T) {
	c := embedded(t).Client
	var rnf *types.ResourceNotFoundException
	_, err := updateTTL(c, "missing", "expires", true)
	if !errors.As(err, &rnf) {
		t.Errorf("UpdateTimeToLive: err = %v, want *types.ResourceNotFoundException", err)
	}
	_, err = c.DescribeTimeToLive(context.Background(), &dynamodb.DescribeTimeToLiveInput{TableName: aws.String("missing")})
	if !errors.As(err, &rnf) {
		t.Errorf("DescribeTimeToLive: err = %v, want *types.ResourceNotFoundException", err)
	}
}

func TestUpdateTimeToLiveValidatesRequiredMembers(t *testing.T) {
	e := embedded(t)
	createTable(t, e.Client, "t", "")
	for _, tc := range []struct{ body, want string }{
		{`{"TimeToLiveSpecification":{"AttributeName":"x","Enabled":true}}`, "1 validation error detected: Value null at 'tableName'"},
		{`{"TableName":"t"}`, "Value null at 'timeToLiveSpecification'"},
		{`{"TableName":"t","TimeToLiveSpecification":{}}`, "2 validation errors detected: Value null at 'timeToLiveSpecification.attributeName'"},
		{`{"TableName":"t","TimeToLiveSpecification":{"AttributeName":"","Enabled":true}}`, "at 'timeToLiveSpecification.attributeName' failed to satisfy constraint: Member must have length greater than or equal to 1"},
	} {
		status, out := rawCall(t, e.URL, "UpdateTimeToLive", tc.body)
		msg, _ := out["message"].(string)
		if status != http.StatusBadRequest || out["__type"] != "com.amazonaws.dynamodb.v20120810#ValidationException" || !strings.Contains(msg, tc.want) {
			t.Errorf("%s: got %d %v, want 400 ValidationException containing %q", tc.body, status, out, tc.want)
		}
	}
}

func TestTimeToLiveSettingIsForgottenWhenTheTableIsDeleted(t *testing.T) {
	c := embedded(t).Client
	createTable(t, c, "t", "")
	if _, err := updateTTL(c, "t", "expires", true); err != nil {
		t.Fatal(err)
	}
	if _, err := c.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String("t")}); err != nil {
		t.Fatal(err)
	}
	createTable(t, c, "t", "")
	if got := describeTTL(t, c, "t").TimeToLiveStatus; got != types.TimeToLiveStatusDisabled {
		t.Errorf("status of the recreated table = %s, want DISABLED", got)
	}
}

func TestTimeToLiveDoesNotDeleteExpiredItems(t *testing.T) {
	c := embedded(t).Client
	createTable(t, c, "t", "")
	if _, err := updateTTL(c, "t", "expires", true); err != nil {
		t.Fatal(err)
	}
	putItem(t, c, "t", map[string]types.AttributeValue{"pk": s("a"), "expires": n("1")}) // 1970
	time.Sleep(10 * time.Millisecond)
	if got := getNumber(t, c, "t", "a", "expires"); got != "1" {
		t.Errorf("expired item: expires = %q, want the item still there with 1", got)
	}
}

func TestDisableTimeToLiveLeavesTheOperationsUnsupported(t *testing.T) {
	c := embedded(t, func(o *Options) { o.DisableTimeToLive = true }).Client
	createTable(t, c, "t", "")
	_, err := updateTTL(c, "t", "expires", true)
	if code := apiErrorCode(err); code != "UnknownOperationException" {
		t.Errorf("UpdateTimeToLive: err = %v, want UnknownOperationException", err)
	}
	_, err = c.DescribeTimeToLive(context.Background(), &dynamodb.DescribeTimeToLiveInput{TableName: aws.String("t")})
	if code := apiErrorCode(err); code != "UnknownOperationException" {
		t.Errorf("DescribeTimeToLive: err = %v, want UnknownOperationException", err)
	}
}
