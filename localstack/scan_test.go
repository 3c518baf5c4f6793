package localstack

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// fillNumbered creates table "t" keyed by pk alone with count items, pk
// "item-000" upwards and v the item's number.
func fillNumbered(t *testing.T, c *dynamodb.Client, count int) {
	t.Helper()
	createTable(t, c, "t", "")
	for i := range count {
		putItem(t, c, "t", map[string]types.AttributeValue{"pk": s(fmt.Sprintf("item-%03d", i)), "v": n(fmt.Sprint(i))})
	}
}

func str(t *testing.T, item map[string]types.AttributeValue, attr string) string {
	t.Helper()
	v, ok := item[attr].(*types.AttributeValueMemberS)
	if !ok {
		t.Fatalf("item %v has no string %s", item, attr)
	}
	return v.Value
}

// scanPages runs the paginated Scan in to its end and returns its pages,
// failing the test on an error or after 10000 pages.
func scanPages(t *testing.T, c *dynamodb.Client, in *dynamodb.ScanInput) []*dynamodb.ScanOutput {
	t.Helper()
	var pages []*dynamodb.ScanOutput
	p := dynamodb.NewScanPaginator(c, in)
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatalf("Scan page %d: %v", len(pages), err)
		}
		pages = append(pages, page)
		if len(pages) > 10000 {
			t.Fatal("more than 10000 pages")
		}
	}
	return pages
}

// parallelScan runs every segment of a parallel Scan (in with Segment and
// TotalSegments set) to its end, checking each page against limit, and
// returns the pk values read, by segment, and the totals of Count and
// ScannedCount.
func parallelScan(t *testing.T, c *dynamodb.Client, in dynamodb.ScanInput, total int, limit int32) (bySegment [][]string, count, scanned int32) {
	t.Helper()
	bySegment = make([][]string, total)
	for seg := range total {
		in := in
		in.Segment, in.TotalSegments = aws.Int32(int32(seg)), aws.Int32(int32(total))
		if limit > 0 {
			in.Limit = aws.Int32(limit)
		}
		for i, page := range scanPages(t, c, &in) {
			if page.Count != int32(len(page.Items)) && in.Select != types.SelectCount {
				t.Errorf("segment %d page %d: Count %d, %d items", seg, i, page.Count, len(page.Items))
			}
			if limit > 0 && (page.ScannedCount > limit || (page.LastEvaluatedKey != nil) != (page.ScannedCount == limit)) {
				t.Errorf("segment %d page %d: ScannedCount %d, LastEvaluatedKey %v; want at most %d, with a key exactly on full pages",
					seg, i, page.ScannedCount, page.LastEvaluatedKey, limit)
			}
			for _, item := range page.Items {
				bySegment[seg] = append(bySegment[seg], str(t, item, "pk"))
			}
			count += page.Count
			scanned += page.ScannedCount
		}
	}
	return bySegment, count, scanned
}

// exactlyOnce fails the test unless the pk values of bySegment, together,
// are want, each once, and every segment has at least one.
func exactlyOnce(t *testing.T, bySegment [][]string, want []string) {
	t.Helper()
	var got []string
	for seg, pks := range bySegment {
		if len(pks) == 0 && len(want) >= 10*len(bySegment) {
			t.Errorf("segment %d of %d read no item", seg, len(bySegment))
		}
		got = append(got, pks...)
	}
	sort.Strings(got)
	sort.Strings(want)
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("items read across segments (%d):\n%v\nwant each of (%d) once:\n%v", len(got), got, len(want), want)
	}
}

// numbered returns the pk values "item-000" upwards of fillNumbered's count
// items, only those whose number keep accepts (all when keep is nil).
func numbered(count int, keep func(int) bool) []string {
	var pks []string
	for i := range count {
		if keep == nil || keep(i) {
			pks = append(pks, fmt.Sprintf("item-%03d", i))
		}
	}
	return pks
}

func TestParallelScanReadsEveryItemExactlyOnceAcrossSegments(t *testing.T) {
	c := embedded(t).Client
	fillNumbered(t, c, 150)
	for _, total := range []int{2, 4, 7} {
		for _, limit := range []int32{0, 1, 6} {
			t.Run(fmt.Sprintf("segments=%d/limit=%d", total, limit), func(t *testing.T) {
				bySegment, count, scanned := parallelScan(t, c, dynamodb.ScanInput{TableName: aws.String("t")}, total, limit)
				exactlyOnce(t, bySegment, numbered(150, nil))
				if count != 150 || scanned != 150 {
					t.Errorf("total Count, ScannedCount = %d, %d; want 150, 150", count, scanned)
				}
			})
		}
	}
}

func TestParallelScanKeepsEachPartitionInOneSegment(t *testing.T) {
	c := embedded(t).Client
	createTable(t, c, "t", "sk")
	for p := range 12 {
		for i := range 5 {
			putItem(t, c, "t", map[string]types.AttributeValue{"pk": s(fmt.Sprintf("p%02d", p)), "sk": s(fmt.Sprint(i))})
		}
	}
	bySegment, _, scanned := parallelScan(t, c, dynamodb.ScanInput{TableName: aws.String("t")}, 3, 4)
	if scanned != 60 {
		t.Errorf("ScannedCount total = %d, want 60", scanned)
	}
	segmentOfPK := map[string]int{}
	perPK := map[string]int{}
	for seg, pks := range bySegment {
		for _, pk := range pks {
			perPK[pk]++
			if prev, ok := segmentOfPK[pk]; ok && prev != seg {
				t.Errorf("partition %s read in segments %d and %d", pk, prev, seg)
			}
			segmentOfPK[pk] = seg
		}
	}
	if len(perPK) != 12 {
		t.Errorf("read %d partitions, want 12", len(perPK))
	}
	for pk, n := range perPK {
		if n != 5 {
			t.Errorf("partition %s: read %d items, want 5", pk, n)
		}
	}
}

func TestParallelScanAppliesFilterAndProjectionAndCountsItemsEvaluated(t *testing.T) {
	c := embedded(t).Client
	fillNumbered(t, c, 100)
	in := dynamodb.ScanInput{TableName: aws.String("t"),
		FilterExpression:          aws.String("#v >= :min"),
		ProjectionExpression:      aws.String("pk"),
		ExpressionAttributeNames:  map[string]string{"#v": "v"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":min": n("70")},
	}
	for _, limit := range []int32{0, 5} {
		t.Run(fmt.Sprintf("limit=%d", limit), func(t *testing.T) {
			bySegment, count, scanned := parallelScan(t, c, in, 4, limit)
			exactlyOnce(t, bySegment, numbered(100, func(i int) bool { return i >= 70 }))
			if count != 30 || scanned != 100 {
				t.Errorf("total Count, ScannedCount = %d, %d; want 30, 100", count, scanned)
			}
		})
	}
	out, err := c.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String("t"), Segment: aws.Int32(0), TotalSegments: aws.Int32(2),
		ProjectionExpression: aws.String("pk"), Limit: aws.Int32(3)})
	if err != nil {
		t.Fatal(err)
	}
	for _, item := range out.Items {
		if _, ok := item["v"]; ok || len(item) != 1 {
			t.Errorf("item %v, want pk only", item)
		}
	}
}

func TestParallelScanWithSelectCountReturnsCountsOnly(t *testing.T) {
	c := embedded(t).Client
	fillNumbered(t, c, 40)
	in := dynamodb.ScanInput{TableName: aws.String("t"), Select: types.SelectCount,
		FilterExpression: aws.String("v < :max"), ExpressionAttributeValues: map[string]types.AttributeValue{":max": n("10")}}
	var count, scanned int32
	for seg := range 2 {
		in.Segment, in.TotalSegments = aws.Int32(int32(seg)), aws.Int32(2)
		out, err := c.Scan(context.Background(), &in)
		if err != nil {
			t.Fatal(err)
		}
		if out.Items != nil {
			t.Errorf("segment %d: Items %v, want none", seg, out.Items)
		}
		count += out.Count
		scanned += out.ScannedCount
	}
	if count != 10 || scanned != 40 {
		t.Errorf("Count, ScannedCount = %d, %d; want 10, 40", count, scanned)
	}
}

func TestParallelScanWithDisableScanCountsLeavesCountsAsMinidynWould(t *testing.T) {
	c := embedded(t, func(o *Options) { o.DisableScanCounts = true }).Client
	fillNumbered(t, c, 40)
	var items int
	for seg := range 2 {
		out, err := c.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String("t"), Select: types.SelectCount,
			Segment: aws.Int32(int32(seg)), TotalSegments: aws.Int32(2)})
		if err != nil {
			t.Fatal(err)
		}
		if out.ScannedCount != 0 || int(out.Count) != len(out.Items) {
			t.Errorf("segment %d: Count, ScannedCount, len(Items) = %d, %d, %d; want ScannedCount 0 and the Items counted",
				seg, out.Count, out.ScannedCount, len(out.Items))
		}
		items += len(out.Items)
	}
	if items != 40 {
		t.Errorf("%d items in both segments, want 40", items)
	}
}

func TestParallelScanOfAnIndexReadsEveryIndexedItemExactlyOnce(t *testing.T) {
	ctx := context.Background()
	c := embedded(t).Client
	sType := types.ScalarAttributeTypeS
	_, err := c.CreateTable(ctx, &dynamodb.CreateTableInput{TableName: aws.String("t"), BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: sType}, {AttributeName: aws.String("g"), AttributeType: sType}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{IndexName: aws.String("by-g"),
			KeySchema:  []types.KeySchemaElement{{AttributeName: aws.String("g"), KeyType: types.KeyTypeHash}},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := range 60 {
		item := map[string]types.AttributeValue{"pk": s(fmt.Sprintf("item-%03d", i))}
		if i%3 != 0 { // a third of the items are not in the sparse index
			item["g"] = s(fmt.Sprintf("g%d", i%5))
			want = append(want, fmt.Sprintf("item-%03d", i))
		}
		putItem(t, c, "t", item)
	}
	bySegment, count, _ := parallelScan(t, c, dynamodb.ScanInput{TableName: aws.String("t"), IndexName: aws.String("by-g")}, 3, 4)
	exactlyOnce(t, bySegment, want)
	if count != int32(len(want)) {
		t.Errorf("Count total = %d, want %d", count, len(want))
	}
}

func TestParallelScanRejectsInvalidSegmentsWithValidationException(t *testing.T) {
	c := embedded(t).Client
	fillNumbered(t, c, 3)
	for name, tc := range map[string]struct {
		segment, total *int32
		want           string
	}{
		"Segment without TotalSegments":  {aws.Int32(0), nil, "The TotalSegments parameter is required but was not present in the request when Segment parameter is present"},
		"TotalSegments without Segment":  {nil, aws.Int32(2), "The Segment parameter is required but was not present in the request when parameter TotalSegments is present"},
		"Segment equal to TotalSegments": {aws.Int32(2), aws.Int32(2), "Segment: 2 is not less than TotalSegments: 2"},
		"Segment negative":               {aws.Int32(-1), aws.Int32(2), "Value '-1' at 'segment' failed to satisfy constraint: Member must have value greater than or equal to 0"},
		"TotalSegments zero":             {aws.Int32(0), aws.Int32(0), "Value '0' at 'totalSegments' failed to satisfy constraint: Member must have value greater than or equal to 1"},
		"TotalSegments too large":        {aws.Int32(0), aws.Int32(1000001), "Value '1000001' at 'totalSegments' failed to satisfy constraint: Member must have value less than or equal to 1000000"},
		"Segment too large":              {aws.Int32(1000000), aws.Int32(1000000), "Value '1000000' at 'segment' failed to satisfy constraint: Member must have value less than or equal to 999999"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := c.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String("t"), Segment: tc.segment, TotalSegments: tc.total})
			if apiErrorCode(err) != codeValidation || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want a ValidationException saying %q", err, tc.want)
			}
		})
	}
	for _, total := range []int32{1, 1000000} {
		if _, err := c.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String("t"), Segment: aws.Int32(total - 1), TotalSegments: aws.Int32(total)}); err != nil {
			t.Errorf("Segment %d of %d: %v", total-1, total, err)
		}
	}
}

func TestParallelScanRejectsAStartKeyOfAnotherSegment(t *testing.T) {
	ctx := context.Background()
	c := embedded(t).Client
	fillNumbered(t, c, 20)
	first, err := c.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String("t"), Segment: aws.Int32(0), TotalSegments: aws.Int32(2), Limit: aws.Int32(1)})
	if err != nil {
		t.Fatal(err)
	}
	if first.LastEvaluatedKey == nil {
		t.Fatal("no LastEvaluatedKey after a full page")
	}
	_, err = c.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String("t"), Segment: aws.Int32(1), TotalSegments: aws.Int32(2), ExclusiveStartKey: first.LastEvaluatedKey})
	if apiErrorCode(err) != codeValidation || !strings.Contains(err.Error(), "does not map to the provided Segment and TotalSegments") {
		t.Errorf("err = %v, want a ValidationException about the start key's segment", err)
	}
}

func TestParallelScanOfAMissingTableIsResourceNotFound(t *testing.T) {
	c := embedded(t).Client
	_, err := c.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String("missing"), Segment: aws.Int32(0), TotalSegments: aws.Int32(2)})
	if apiErrorCode(err) != codeResourceNotFound {
		t.Errorf("err = %v, want ResourceNotFoundException", err)
	}
}

func TestParallelScanReportsAnInvalidFilterOnAnEmptySegment(t *testing.T) {
	c := embedded(t).Client
	createTable(t, c, "t", "")
	_, err := c.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String("t"), Segment: aws.Int32(0), TotalSegments: aws.Int32(2),
		FilterExpression: aws.String("#undeclared = :v"), ExpressionAttributeValues: map[string]types.AttributeValue{":v": n("1")}})
	if apiErrorCode(err) != codeValidation {
		t.Errorf("err = %v, want ValidationException", err)
	}
}

func TestDisableScanSegmentsReadsTheWholeTableInEverySegment(t *testing.T) {
	c := embedded(t, func(o *Options) { o.DisableScanSegments = true }).Client
	fillNumbered(t, c, 10)
	out, err := c.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String("t"), Segment: aws.Int32(1), TotalSegments: aws.Int32(4)})
	if err != nil {
		t.Fatal(err)
	}
	if out.Count != 10 {
		t.Errorf("Count = %d, want 10 (the whole table)", out.Count)
	}
	if _, err := c.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String("t"), Segment: aws.Int32(4), TotalSegments: aws.Int32(4)}); err != nil {
		t.Errorf("Segment 4 of 4: err = %v, want none (minidyn does not validate)", err)
	}
}

// scanAfterDeletingTheStartItem reads a page of limit items of "t", deletes
// its last item and returns the rest of the Scan from that page's
// LastEvaluatedKey.
func scanAfterDeletingTheStartItem(t *testing.T, c *dynamodb.Client, limit int32) (first, rest []string) {
	t.Helper()
	ctx := context.Background()
	page, err := c.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String("t"), Limit: aws.Int32(limit)})
	if err != nil {
		t.Fatal(err)
	}
	if page.LastEvaluatedKey == nil {
		t.Fatal("no LastEvaluatedKey after a full page")
	}
	for _, item := range page.Items {
		first = append(first, str(t, item, "pk"))
	}
	if _, err := c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String("t"), Key: page.LastEvaluatedKey}); err != nil {
		t.Fatal(err)
	}
	for _, p := range scanPages(t, c, &dynamodb.ScanInput{TableName: aws.String("t"), ExclusiveStartKey: page.LastEvaluatedKey, Limit: aws.Int32(4)}) {
		for _, item := range p.Items {
			rest = append(rest, str(t, item, "pk"))
		}
	}
	return first, rest
}

func TestScanResumesAfterAStartKeyWhoseItemWasDeleted(t *testing.T) {
	ctx := context.Background()
	c := embedded(t).Client
	fillNumbered(t, c, 20)
	first, rest := scanAfterDeletingTheStartItem(t, c, 5)
	if want := numbered(20, nil)[5:]; strings.Join(rest, ",") != strings.Join(want, ",") {
		t.Errorf("rest of the scan after %v = %v, want %v", first, rest, want)
	}
	deleted := first[len(first)-1]
	out, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("t"), Key: map[string]types.AttributeValue{"pk": s(deleted)}, ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	if out.Item != nil {
		t.Errorf("deleted item %s is back: %v", deleted, out.Item)
	}
	all, err := c.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String("t")})
	if err != nil {
		t.Fatal(err)
	}
	if all.Count != 19 {
		t.Errorf("Count after the scans = %d, want 19", all.Count)
	}
}

func TestScanAfterADeletedStartKeyAppliesItsFilterAndCounts(t *testing.T) {
	ctx := context.Background()
	c := embedded(t).Client
	fillNumbered(t, c, 20)
	key := map[string]types.AttributeValue{"pk": s("item-009")}
	if _, err := c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String("t"), Key: key}); err != nil {
		t.Fatal(err)
	}
	out, err := c.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String("t"), ExclusiveStartKey: key,
		FilterExpression: aws.String("v >= :min"), ExpressionAttributeValues: map[string]types.AttributeValue{":min": n("15")}})
	if err != nil {
		t.Fatal(err)
	}
	if out.Count != 5 || out.ScannedCount != 10 {
		t.Errorf("Count, ScannedCount = %d, %d; want 5, 10", out.Count, out.ScannedCount)
	}
}

func TestQueryResumesAfterAStartKeyWhoseItemWasDeleted(t *testing.T) {
	ctx := context.Background()
	c := embedded(t).Client
	fillCounts(t, c)
	in := &dynamodb.QueryInput{TableName: aws.String("t"), KeyConditionExpression: aws.String("pk = :p"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":p": s("p")}, Limit: aws.Int32(4)}
	page, err := c.Query(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String("t"), Key: page.LastEvaluatedKey}); err != nil {
		t.Fatal(err)
	}
	in.ExclusiveStartKey, in.Limit = page.LastEvaluatedKey, nil
	rest, err := c.Query(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	var sks []string
	for _, item := range rest.Items {
		sks = append(sks, str(t, item, "sk"))
	}
	if got := strings.Join(sks, ","); got != "04,05,06,07,08,09" {
		t.Errorf("rest of the query = %s, want 04,...,09", got)
	}
}

func TestParallelScanSurvivesDeletingEachPageEnd(t *testing.T) {
	ctx := context.Background()
	c := embedded(t).Client
	fillNumbered(t, c, 120)
	var read [][]string
	for seg := range 4 {
		var pks []string
		in := &dynamodb.ScanInput{TableName: aws.String("t"), Segment: aws.Int32(int32(seg)), TotalSegments: aws.Int32(4), Limit: aws.Int32(3)}
		for pages := 0; ; pages++ {
			out, err := c.Scan(ctx, in)
			if err != nil {
				t.Fatal(err)
			}
			for _, item := range out.Items {
				pks = append(pks, str(t, item, "pk"))
			}
			if out.LastEvaluatedKey == nil || pages > 1000 {
				break
			}
			// A sweeper deletes the page's items, the last one included.
			if _, err := c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String("t"), Key: out.LastEvaluatedKey}); err != nil {
				t.Fatal(err)
			}
			in.ExclusiveStartKey = out.LastEvaluatedKey
		}
		read = append(read, pks)
	}
	exactlyOnce(t, read, numbered(120, nil))
}

func TestDisableStartKeyResumeEndsTheScanAtADeletedStartKey(t *testing.T) {
	c := embedded(t, func(o *Options) { o.DisableStartKeyResume = true }).Client
	fillNumbered(t, c, 10)
	if _, rest := scanAfterDeletingTheStartItem(t, c, 3); len(rest) != 0 {
		t.Errorf("rest of the scan = %v, want nothing (minidyn's gap)", rest)
	}
}
