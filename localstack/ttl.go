package localstack

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// ttlSetting is the TTL configuration the front records for one table. A
// table without an entry has TTL disabled.
type ttlSetting struct {
	attribute string
	enabled   bool
}

// validationErrors formats constraint violations the way DynamoDB reports
// them ("1 validation error detected: ..."), or returns nil when there are
// none.
func validationErrors(problems []string) *response {
	switch len(problems) {
	case 0:
		return nil
	case 1:
		return validationError("1 validation error detected: %s", problems[0])
	default:
		return validationError("%d validation errors detected: %s", len(problems), strings.Join(problems, "; "))
	}
}

func notNull(path string) string {
	return fmt.Sprintf("Value null at '%s' failed to satisfy constraint: Member must not be null", path)
}

func minLength(value, path string, min int) string {
	return fmt.Sprintf("Value '%s' at '%s' failed to satisfy constraint: Member must have length greater than or equal to %d", value, path, min)
}

// checkTableName validates a TableName member.
func checkTableName(name *string) []string {
	switch {
	case name == nil:
		return []string{notNull("tableName")}
	case *name == "":
		return []string{minLength(*name, "tableName", 1)}
	}
	return nil
}

// requireTable returns nil when table exists in minidyn, and otherwise the
// error response to send: ResourceNotFoundException for a missing table.
func (f *front) requireTable(ctx context.Context, table string) *response {
	resp := callJSON(ctx, f.inner, "DescribeTable", tableRequest{TableName: &table})
	switch {
	case resp.ok():
		return nil
	case resp.errorCode() == codeResourceNotFound:
		return errorResponse(http.StatusBadRequest, codeResourceNotFound,
			fmt.Sprintf("Requested resource not found: Table: %s not found", table))
	}
	return resp
}

type timeToLiveSpecification struct {
	AttributeName *string `json:"AttributeName,omitempty"`
	Enabled       *bool   `json:"Enabled,omitempty"`
}

// updateTimeToLive answers UpdateTimeToLive: it validates the request like
// DynamoDB and records the new setting. Changes take effect at once; the
// ENABLING and DISABLING states and DynamoDB's limit of one change per hour
// are not modelled.
func (f *front) updateTimeToLive(ctx context.Context, body []byte) *response {
	var in struct {
		TableName               *string
		TimeToLiveSpecification *timeToLiveSpecification
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return errorResponse(http.StatusBadRequest, codeSerialization, err.Error())
	}
	problems := checkTableName(in.TableName)
	spec := in.TimeToLiveSpecification
	if spec == nil {
		problems = append(problems, notNull("timeToLiveSpecification"))
	} else {
		switch {
		case spec.AttributeName == nil:
			problems = append(problems, notNull("timeToLiveSpecification.attributeName"))
		case *spec.AttributeName == "":
			problems = append(problems, minLength("", "timeToLiveSpecification.attributeName", 1))
		}
		if spec.Enabled == nil {
			problems = append(problems, notNull("timeToLiveSpecification.enabled"))
		}
	}
	if resp := validationErrors(problems); resp != nil {
		return resp
	}
	table, attr, enable := *in.TableName, *spec.AttributeName, *spec.Enabled
	if resp := f.requireTable(ctx, table); resp != nil {
		return resp
	}

	cur := f.ttl[table]
	switch {
	case enable && cur.enabled && cur.attribute == attr:
		return validationError("TimeToLive is already enabled")
	case enable && cur.enabled:
		return validationError("TimeToLive is active on a different AttributeName")
	case !enable && !cur.enabled:
		return validationError("TimeToLive is already disabled")
	case !enable && cur.attribute != attr:
		return validationError("TimeToLive is active on a different AttributeName")
	}
	f.ttl[table] = ttlSetting{attribute: attr, enabled: enable}
	return jsonResponse(struct {
		TimeToLiveSpecification timeToLiveSpecification
	}{timeToLiveSpecification{AttributeName: &attr, Enabled: &enable}})
}

// describeTimeToLive answers DescribeTimeToLive from the recorded settings:
// ENABLED with the attribute name, or DISABLED without one.
func (f *front) describeTimeToLive(ctx context.Context, body []byte) *response {
	var in tableRequest
	if err := json.Unmarshal(body, &in); err != nil {
		return errorResponse(http.StatusBadRequest, codeSerialization, err.Error())
	}
	if resp := validationErrors(checkTableName(in.TableName)); resp != nil {
		return resp
	}
	if resp := f.requireTable(ctx, *in.TableName); resp != nil {
		return resp
	}
	type description struct {
		TimeToLiveStatus string
		AttributeName    string `json:",omitempty"`
	}
	desc := description{TimeToLiveStatus: "DISABLED"}
	if cur := f.ttl[*in.TableName]; cur.enabled {
		desc = description{TimeToLiveStatus: "ENABLED", AttributeName: cur.attribute}
	}
	return jsonResponse(struct{ TimeToLiveDescription description }{desc})
}
