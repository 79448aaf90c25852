package main

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"sort"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/crewcast/crewcast/apitype"
)

func init() {
	register(command{name: "report", summary: "delivery reports: deliveries or summary, as a table, CSV or JSON", run: runReport})
}

func runReport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	usage := func() {
		fmt.Fprintln(stderr, "usage: crewcast report deliveries|summary [--since T] [--until T] [--status S] [--number N] [--group ID] [--format table|csv|json]")
	}
	kind, err := pickSubcommand("report", "report", args, usage, stderr, "deliveries", "summary")
	if err != nil {
		return err
	}
	fs := newFlagSet("report "+kind, stderr)
	cf := bindClientFlags(fs)
	since := fs.String("since", "", "only rows updated at or after this time: RFC 3339, or a duration ago such as 24h")
	until := fs.String("until", "", "only rows updated before this time: RFC 3339, or a duration ago")
	status := fs.String("status", "", "only this recipient status")
	number := fs.String("number", "", "only this phone number")
	groupID := fs.String("group", "", "only this group")
	class := fs.String("error-class", "", "only this error class")
	format := fs.String("format", "table", "table, csv or json")
	limit := fs.Int("limit", 0, "at most this many rows (deliveries; 0 = all)")
	if _, err := positionals(fs, args[1:], 0, "flags only"); err != nil {
		return err
	}
	q := url.Values{}
	for name, v := range map[string]*string{"since": since, "until": until} {
		t, err := reportTime(*v, time.Now())
		if err != nil {
			fmt.Fprintf(stderr, "crewcast report: --%s: %v\n", name, err)
			return errUsage
		}
		if t != "" {
			q.Set(name, t)
		}
	}
	for name, v := range map[string]string{"status": *status, "number": *number, "group_id": *groupID, "error_class": *class} {
		if v != "" {
			q.Set(name, v)
		}
	}
	if *limit > 0 {
		q.Set("limit", strconv.Itoa(*limit))
	}
	switch *format {
	case "table", "csv", "json":
	default:
		fmt.Fprintf(stderr, "crewcast report: --format must be table, csv or json\n")
		return errUsage
	}
	c, err := cf.client()
	if err != nil {
		return err
	}
	path := "/v1/reports/" + kind
	if *format != "table" {
		// CSV and JSON are the server's own output, passed through as is
		// (CSV streams every matching row).
		q.Set("format", *format)
		resp, err := c.request(ctx, "GET", path+"?"+q.Encode(), nil, nil)
		if err != nil {
			return explain(err)
		}
		defer resp.Body.Close()
		_, err = io.Copy(stdout, resp.Body)
		return err
	}
	if kind == "summary" {
		return summaryTable(ctx, c, path, q, stdout)
	}
	return deliveriesTable(ctx, c, path, q, *limit, stdout)
}

// reportTime accepts RFC 3339 or a duration meaning "that long ago".
func reportTime(s string, now time.Time) (string, error) {
	if s == "" {
		return "", nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t.Format(time.RFC3339Nano), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return "", fmt.Errorf("%q is neither an RFC 3339 time nor a duration such as 24h", s)
	}
	return now.Add(-d).UTC().Format(time.RFC3339Nano), nil
}

func deliveriesTable(ctx context.Context, c *apiClient, path string, q url.Values, limit int, stdout io.Writer) error {
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "GROUP\tNUMBER\tNAME\tSTATUS\tATTEMPTS\tSENT\tDELIVERED\tERROR\tUPDATED")
	rows := 0
	for {
		var page struct {
			Deliveries []apitype.Delivery `json:"deliveries"`
			NextCursor string             `json:"next_cursor"`
		}
		if _, err := c.doJSON(ctx, "GET", path+"?"+q.Encode(), nil, nil, &page); err != nil {
			return explain(err)
		}
		for _, d := range page.Deliveries {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", d.GroupID, d.Number, dash(d.Name), d.Status, d.Attempts,
				fmtTime(d.SentAt), fmtTime(d.DeliveredAt), errorText(d.Recipient), fmtTime(d.UpdatedAt))
			rows++
		}
		if page.NextCursor == "" || (limit > 0 && rows >= limit) {
			break
		}
		q.Set("cursor", page.NextCursor)
	}
	return tw.Flush()
}

func summaryTable(ctx context.Context, c *apiClient, path string, q url.Values, stdout io.Writer) error {
	var s struct {
		Total         int            `json:"total"`
		ByStatus      map[string]int `json:"by_status"`
		Replied       int            `json:"replied"`
		Acknowledged  int            `json:"acknowledged"`
		DeliveryRate  float64        `json:"delivery_rate"`
		MedianMS      int64          `json:"median_to_delivered_ms"`
		P95MS         int64          `json:"p95_to_delivered_ms"`
		TopErrorCodes []struct {
			Code  string `json:"code"`
			Class string `json:"class"`
			Count int    `json:"count"`
		} `json:"top_error_codes"`
	}
	if _, err := c.doJSON(ctx, "GET", path+"?"+q.Encode(), nil, nil, &s); err != nil {
		return explain(err)
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "recipients\t%d\n", s.Total)
	statuses := make([]string, 0, len(s.ByStatus))
	for k := range s.ByStatus {
		statuses = append(statuses, k)
	}
	sort.Strings(statuses)
	for _, k := range statuses {
		if s.ByStatus[k] > 0 {
			fmt.Fprintf(tw, "  %s\t%d\n", k, s.ByStatus[k])
		}
	}
	fmt.Fprintf(tw, "replied\t%d\n", s.Replied)
	fmt.Fprintf(tw, "acknowledged\t%d\n", s.Acknowledged)
	fmt.Fprintf(tw, "delivery rate\t%.1f%%\n", s.DeliveryRate*100)
	fmt.Fprintf(tw, "time to delivered\tmedian %v, p95 %v\n", time.Duration(s.MedianMS)*time.Millisecond, time.Duration(s.P95MS)*time.Millisecond)
	for _, e := range s.TopErrorCodes {
		fmt.Fprintf(tw, "error %s\t%d (%s)\n", e.Code, e.Count, e.Class)
	}
	return tw.Flush()
}
