package gen

import (
	"math"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

func TestTaxiValues(t *testing.T) {
	opts := Options{Rows: 100_003, Files: 3, Seed: 9}
	st, res := generateT(t, Taxi, opts)
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	files := checkLayout(t, mem, st, res, opts, TaxiSchema(), 4)

	yearStart := time.Date(taxiYear, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro()
	yearEnd := time.Date(taxiYear+1, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro()
	payTypes := setOf(paymentTypes)
	var (
		prevPickup      int64
		passengers      [7]int
		hours           [24]int
		days            = map[arrow.Date32]bool{}
		short, card     int
		sameZone        int
		cardTip, cardFr float64
	)
	for _, p := range files {
		for rg := range p.rdr.NumRowGroups() {
			p.eachBatch(t, rg, func(rec arrow.RecordBatch) {
				vendor := rec.Column(0).(*array.Int32).Int32Values()
				pickup := rec.Column(1).(*array.Timestamp).TimestampValues()
				dropoff := rec.Column(2).(*array.Timestamp).TimestampValues()
				day := rec.Column(3).(*array.Date32).Date32Values()
				pass := rec.Column(4).(*array.Int32).Int32Values()
				dist := rec.Column(5).(*array.Float64).Float64Values()
				pu := rec.Column(6).(*array.Int32).Int32Values()
				do := rec.Column(7).(*array.Int32).Int32Values()
				pay := rec.Column(8).(*array.String)
				fare := rec.Column(9).(*array.Float64).Float64Values()
				tip := rec.Column(10).(*array.Float64).Float64Values()
				tolls := rec.Column(11).(*array.Float64).Float64Values()
				total := rec.Column(12).(*array.Float64).Float64Values()
				for i := range int(rec.NumRows()) {
					pk, dr := int64(pickup[i]), int64(dropoff[i])
					if pk < prevPickup {
						t.Fatalf("pickup %d before the previous %d", pk, prevPickup)
					}
					prevPickup = pk
					if pk < yearStart || pk >= yearEnd || pk%1_000_000 != 0 {
						t.Fatalf("pickup %v outside %d or not whole seconds", time.UnixMicro(pk).UTC(), taxiYear)
					}
					if d := time.Duration(dr-pk) * time.Microsecond; d < time.Minute || d > 4*time.Hour {
						t.Fatalf("trip of %v", d)
					}
					if want := arrow.Date32(pk / 86_400_000_000); day[i] != want {
						t.Fatalf("pickup_date %v for pickup %v", day[i], time.UnixMicro(pk).UTC())
					}
					days[day[i]] = true
					hours[time.UnixMicro(pk).UTC().Hour()]++
					if vendor[i] != 1 && vendor[i] != 2 {
						t.Fatalf("vendor %d", vendor[i])
					}
					if pass[i] < 1 || pass[i] > 6 {
						t.Fatalf("passenger_count %d", pass[i])
					}
					passengers[pass[i]]++
					if dist[i] <= 0 || dist[i] > 50 {
						t.Fatalf("trip_distance %v", dist[i])
					}
					if dist[i] < 2 {
						short++
					}
					if pu[i] < 1 || pu[i] > zones || do[i] < 1 || do[i] > zones {
						t.Fatalf("locations %d -> %d", pu[i], do[i])
					}
					if pu[i] == do[i] {
						sameZone++
					}
					pt := pay.Value(i)
					if !payTypes[pt] {
						t.Fatalf("payment_type %q", pt)
					}
					for _, v := range []float64{fare[i], tip[i], tolls[i], total[i]} {
						if v < 0 || v != math.Round(v*100)/100 {
							t.Fatalf("amount %v is not whole cents", v)
						}
					}
					if math.Abs(total[i]-(fare[i]+tip[i]+tolls[i])) > 0.005 {
						t.Fatalf("total %v != fare %v + tip %v + tolls %v", total[i], fare[i], tip[i], tolls[i])
					}
					airport := (pu[i] == zoneJFK) != (do[i] == zoneJFK)
					if metered := 3 + 3.5*dist[i]; !airport && fare[i] < metered-0.05 {
						t.Fatalf("fare %v for %v miles", fare[i], dist[i])
					}
					if airport && fare[i] != 70 {
						t.Fatalf("JFK fare %v", fare[i])
					}
					if pt == "card" {
						card++
						cardTip += tip[i]
						cardFr += fare[i]
					} else if tip[i] != 0 {
						t.Fatalf("tip %v paid by %s", tip[i], pt)
					}
				}
			})
		}
	}
	n := float64(opts.Rows)
	if r := float64(passengers[1]) / n; r < 0.65 || r > 0.8 {
		t.Errorf("%.2f of trips have one passenger, want most", r)
	}
	if r := float64(short) / n; r < 0.4 {
		t.Errorf("%.2f of trips are under 2 miles, want most to be short", r)
	}
	if r := float64(card) / n; r < 0.7 || r > 0.8 {
		t.Errorf("%.2f of trips paid by card, want about 0.75", r)
	}
	if r := cardTip / cardFr; r < 0.1 || r > 0.2 {
		t.Errorf("card tips are %.2f of fares", r)
	}
	if r := float64(sameZone) / n; r > 0.1 {
		t.Errorf("%.2f of trips end in their pickup zone", r)
	}
	if len(days) != 365 {
		t.Errorf("pickups on %d days, want all 365 of %d", len(days), taxiYear)
	}
	if hours[18] < 3*hours[4] {
		t.Errorf("%d pickups at 18h, %d at 4h: want an evening peak", hours[18], hours[4])
	}
}
