package gen

import (
	"context"
	"math/bits"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/sluice-data/sluice/store"
)

// TaxiSchema is the schema of Taxi's files, none nullable, money as float64.
func TaxiSchema() *arrow.Schema {
	f := func(name string, t arrow.DataType) arrow.Field { return arrow.Field{Name: name, Type: t} }
	return arrow.NewSchema([]arrow.Field{
		f("vendor_id", arrow.PrimitiveTypes.Int32),
		f("pickup_datetime", arrow.FixedWidthTypes.Timestamp_us),
		f("dropoff_datetime", arrow.FixedWidthTypes.Timestamp_us),
		f("pickup_date", arrow.FixedWidthTypes.Date32),
		f("passenger_count", arrow.PrimitiveTypes.Int32),
		f("trip_distance", arrow.PrimitiveTypes.Float64),
		f("pu_location_id", arrow.PrimitiveTypes.Int32),
		f("do_location_id", arrow.PrimitiveTypes.Int32),
		f("payment_type", arrow.BinaryTypes.String),
		f("fare_amount", arrow.PrimitiveTypes.Float64),
		f("tip_amount", arrow.PrimitiveTypes.Float64),
		f("tolls_amount", arrow.PrimitiveTypes.Float64),
		f("total_amount", arrow.PrimitiveTypes.Float64),
	}, nil)
}

// taxiDict are the columns written as dictionary arrays.
var taxiDict = map[string]bool{"payment_type": true}

// taxiYear is the year pickups are spread over.
const taxiYear = 2023

const payCard = 0 // index in paymentTypes

const (
	zoneJFK       = 132
	zoneLaGuardia = 138
	zones         = 265
)

// Trip shape. Distances are in hundredths of a mile and money in cents,
// so every value is integer arithmetic until the final division.
var (
	// Relative trips per hour of day and per weekday (Sunday first): a
	// night trough, a morning rise and an evening peak.
	hourWeights = [24]uint64{22, 15, 10, 7, 6, 7, 16, 27, 33, 33, 33, 35,
		37, 38, 41, 42, 41, 45, 48, 44, 40, 40, 37, 30}
	dayWeights = [7]uint64{8, 9, 10, 10, 11, 11, 10}

	paymentTypes = []string{"card", "cash", "no charge", "dispute"}
)

// taxiPickers are the weighted choices of a trip, made when trips are
// first generated (not as every sluice process starts).
type taxiPickers struct {
	vendors, passengers picker[int32]
	payments            picker[int8]
	distBuckets         picker[[2]uint64]
	locations           picker[int32]
}

var taxiPick = sync.OnceValue(func() taxiPickers {
	return taxiPickers{
		vendors:    newPicker([]int32{1, 2}, []int{27, 73}),
		passengers: newPicker([]int32{1, 2, 3, 4, 5, 6}, []int{72, 14, 4, 2, 5, 3}),
		payments:   newPicker([]int8{payCard, 1, 2, 3}, []int{75, 20, 3, 2}),
		// Distance buckets [lo, hi) in centimiles: mostly short hops, a
		// long tail of airport runs.
		distBuckets: newPicker([][2]uint64{{10, 100}, {100, 200}, {200, 400}, {400, 800},
			{800, 1500}, {1500, 2500}, {2500, 4000}}, []int{20, 30, 22, 13, 8, 5, 2}),
		locations: zonePicker(),
	}
})

// zonePicker favours the busy Manhattan zones (three quarters of trips)
// and spreads the rest over all 265.
func zonePicker() picker[int32] {
	hot := []int32{237, 161, 236, 162, 186, 230, 142, 170, 48, 163, 234, 68, 79,
		239, 141, 107, 263, 249, 164, 113, 140, 229, 43, 100, 246, 90, 233, 137,
		262, 151, 238, 75, 158, 125, 87, 144, 114, 209, 211, 231}
	var ids []int32
	var w []int
	for i, z := range hot {
		ids, w = append(ids, z), append(w, 40-i)
	}
	for z := int32(1); z <= zones; z++ {
		ids, w = append(ids, z), append(w, 1)
	}
	return newPicker(ids, w)
}

// pickupClock maps a position in [0, mass) to a pickup time. Each hour of
// the year holds mass in proportion to its weight, so evenly spaced
// positions give the daily and weekly rhythm of real trips, in time order.
type pickupClock struct {
	startUs int64
	weight  []uint64 // per hour of the year
	cum     []uint64 // mass before each hour; cum[len(weight)] is the total
}

const hourUs = 3600 * 1_000_000

func newPickupClock(year int) *pickupClock {
	start := time.Date(year, 1, 1, 0, 0, 0, 0, time.UTC)
	hours := int(start.AddDate(1, 0, 0).Sub(start) / time.Hour)
	c := &pickupClock{startUs: start.UnixMicro(), weight: make([]uint64, hours), cum: make([]uint64, hours+1)}
	for h := range hours {
		t := start.Add(time.Duration(h) * time.Hour)
		c.weight[h] = hourWeights[t.Hour()] * dayWeights[t.Weekday()]
		c.cum[h+1] = c.cum[h] + c.weight[h]*hourUs
	}
	return c
}

func (c *pickupClock) mass() uint64 { return c.cum[len(c.weight)] }

// hourOf finds the hour holding pos by binary search.
func (c *pickupClock) hourOf(pos uint64) int {
	lo, hi := 0, len(c.weight)-1
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if c.cum[mid] <= pos {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

// mulDiv is a*b/c without overflow; a < c.
func mulDiv(a, b, c uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	q, _ := bits.Div64(hi, lo, c)
	return q
}

// Taxi writes a NYC-taxi-trip-shaped table of opts.Rows rows as opts.Files
// snappy Parquet files named prefix/part-NNNNN.parquet. Pickups cover the
// year 2023 in time order across files, with a daily and weekly rhythm.
func Taxi(ctx context.Context, st *store.Store, prefix string, opts Options) (Result, error) {
	if err := check(st, opts); err != nil {
		return Result{}, err
	}
	clock := newPickupClock(taxiYear)
	schema := writeSchema(TaxiSchema(), taxiDict)
	ds := &dataset{
		name:   "taxi",
		schema: schema,
		plain:  []string{"pickup_datetime", "dropoff_datetime"},
		source: func(mem memory.Allocator, i int, start, rows int64) source {
			s := newTaxiSource(mem, schema)
			s.r = newRNG(opts.Seed, tableTaxi, i, streamValues)
			s.clock = clock
			s.row, s.rows = uint64(start), uint64(opts.Rows)
			s.pos = mulDiv(s.row, clock.mass(), s.rows)
			s.hour = clock.hourOf(s.pos)
			return s
		},
	}
	return generate(ctx, st, prefix, opts, ds)
}

type taxiSource struct {
	schema *arrow.Schema
	r      *rng
	clock  *pickupClock
	row    uint64 // global index of the next row
	rows   uint64 // rows in the dataset
	pos    uint64 // clock position where the next row's slot starts
	hour   int    // hour of the year of the previous pickup

	i32  *array.Int32Builder
	ts   *array.TimestampBuilder
	date *array.Date32Builder
	f64  *array.Float64Builder
	pay  *dictColumn

	// Column scratch, reused for every batch of the file.
	vendor, pass, pu, do         []int32
	pickup, dropoff              []arrow.Timestamp
	day                          []arrow.Date32
	dist, fare, tip, tolls, paid []float64
	payIdx                       []int8
}

func newTaxiSource(mem memory.Allocator, schema *arrow.Schema) *taxiSource {
	return &taxiSource{
		schema: schema,
		i32:    array.NewInt32Builder(mem),
		ts:     array.NewTimestampBuilder(mem, arrow.FixedWidthTypes.Timestamp_us.(*arrow.TimestampType)),
		date:   array.NewDate32Builder(mem),
		f64:    array.NewFloat64Builder(mem),
		pay:    newDictColumn(mem, paymentTypes),
	}
}

func (s *taxiSource) release() {
	s.i32.Release()
	s.ts.Release()
	s.date.Release()
	s.f64.Release()
	s.pay.release()
}

func (s *taxiSource) grow(n int) {
	if cap(s.vendor) >= n {
		return
	}
	s.vendor, s.pass, s.pu, s.do = make([]int32, n), make([]int32, n), make([]int32, n), make([]int32, n)
	s.pickup, s.dropoff = make([]arrow.Timestamp, n), make([]arrow.Timestamp, n)
	s.day = make([]arrow.Date32, n)
	s.dist, s.fare, s.tip, s.tolls, s.paid = make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
	s.payIdx = make([]int8, n)
}

func (s *taxiSource) next(n int) arrow.RecordBatch {
	tp := taxiPick()
	s.grow(n)
	r, c := s.r, s.clock
	mass := c.mass()
	for j := range n {
		// Row g owns the slot [g*mass/rows, (g+1)*mass/rows) of the
		// clock: pickups are spread like real ones yet never go back in
		// time, across batches and files alike.
		end := mulDiv(s.row+1, mass, s.rows)
		pos := s.pos + r.n(end-s.pos)
		s.pos = end
		s.row++
		for s.hour+1 < len(c.weight) && c.cum[s.hour+1] <= pos {
			s.hour++
		}
		pickup := c.startUs + int64(s.hour)*hourUs + int64((pos-c.cum[s.hour])/c.weight[s.hour])
		pickup -= pickup % 1_000_000 // whole seconds, as the meters record them

		b := tp.distBuckets.pick(r)
		dist := b[0] + r.n(b[1]-b[0])
		pu, do := tp.locations.pick(r), tp.locations.pick(r)
		if dist >= 1000 && r.n(10) < 4 {
			airport := int32(zoneJFK)
			if r.n(3) == 0 {
				airport = zoneLaGuardia
			}
			if r.n(2) == 0 {
				pu = airport
			} else {
				do = airport
			}
		}
		// Crosstown crawl for short hops; long trips use highways.
		mph := 7 + r.n(14) + dist/200
		secs := dist*36/mph + 60 + r.n(300)

		// Metered fare: $3.00 flag drop, $3.50 a mile, $0.35 a minute,
		// to the dime; JFK to or from elsewhere is a flat $70.
		fare := (300 + dist*350/100 + secs*35/60 + 5) / 10 * 10
		if (pu == zoneJFK) != (do == zoneJFK) {
			fare = 7000
		}
		pay := tp.payments.pick(r)
		var tip, tolls uint64
		if pay == payCard && r.n(5) != 0 {
			tip = fare * (10 + r.n(21)) / 100
		}
		if dist >= 800 && r.n(4) == 0 {
			tolls = 694
		}

		s.vendor[j] = tp.vendors.pick(r)
		s.pass[j] = tp.passengers.pick(r)
		s.pickup[j] = arrow.Timestamp(pickup)
		s.dropoff[j] = arrow.Timestamp(pickup + int64(secs)*1_000_000)
		s.day[j] = arrow.Date32(pickup / (86400 * 1_000_000))
		s.dist[j] = float64(dist) / 100
		s.pu[j], s.do[j] = pu, do
		s.payIdx[j] = pay
		s.fare[j] = float64(fare) / 100
		s.tip[j] = float64(tip) / 100
		s.tolls[j] = float64(tolls) / 100
		s.paid[j] = float64(fare+tip+tolls) / 100
	}
	cols := []arrow.Array{
		column(s.i32, s.vendor[:n]),
		column(s.ts, s.pickup[:n]), column(s.ts, s.dropoff[:n]),
		column(s.date, s.day[:n]),
		column(s.i32, s.pass[:n]),
		column(s.f64, s.dist[:n]),
		column(s.i32, s.pu[:n]), column(s.i32, s.do[:n]),
		s.pay.array(s.payIdx[:n]),
		column(s.f64, s.fare[:n]), column(s.f64, s.tip[:n]), column(s.f64, s.tolls[:n]), column(s.f64, s.paid[:n]),
	}
	defer releaseAll(cols)
	return array.NewRecordBatch(s.schema, cols, int64(n))
}
