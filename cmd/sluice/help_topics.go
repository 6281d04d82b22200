package main

import "github.com/spf13/cobra"

// outputHelp is what -o writes, for every command that takes it.
const outputHelp = `-o NAME (a path or a store URL) writes the batches in the format --format
names or, without it, NAME's suffix does; nothing appears under NAME unless
all of it was written:
  NAME.arrow     an Arrow IPC file (also .feather, .ipc), its footer listing
                 the batches in dataset order
  NAME.arrows    an Arrow IPC stream, in --order
  NAME.parquet   a Parquet file (also .pq; snappy), in --order
  NAME.csv       CSV with a header line, in --order
  NAME.jsonl     JSON lines (also .ndjson), one object a row, in --order
  -              an Arrow IPC stream on standard output (or --format's)`

// Help topics: the mechanics several commands share, told once (sluice
// help pipes, urls, sim) instead of in every command's help.
func helpTopics() []*cobra.Command {
	return []*cobra.Command{
		benchFiguresTopic(),
		fanoutTopic(),
		{
			Use:   "pipes",
			Short: "How stages connect: piped processes or one fused process",
			Long: `A pipeline of stages runs two ways, with the same results to the bit:

  sluice run 'scan ./taxi | filter "fare_amount > 20" | count-by payment_type | show'
  sluice scan ./taxi -o - | sluice filter "fare_amount > 20" | sluice count-by payment_type | sluice show

sluice run parses the text into a plan and runs every stage in one process,
with no serialization between them: the fast way, and the way to fan out
(--workers). Piped, each stage is a process of its own that does its own
work under its own nice, affinity, cgroup and limits; the stream between
them is Arrow IPC. Between two sluice stages on Linux the batches go
through shared memory instead of being copied through the pipe
(SLUICE_PIPE=plain turns that off; SLUICE_PIPE_TRACE=1 says when it is
used). A stage that is not first reads the stream on stdin; one that is
not last writes it on stdout, or shows it as a table on a terminal.

A program of your own, in any language, is a stage too: exec -- CMD ARGS
gives it the stream on stdin and reads its stdout, as Arrow IPC, CSV or
JSON lines (sluice exec --help).

Batches carry their place in the dataset, so stages that need order
(sort, top, head, the final side of an aggregation) see dataset order
whatever order the batches came in.`,
		},
		{
			Use:   "urls",
			Short: "Where data lives: s3://, gs://, az://, file:// and paths, https://, mem://, globs and prefixes",
			Long: `Every command names data by URL:

  s3://bucket/key      any S3-compatible store: credentials from the standard
                       AWS chain; AWS_ENDPOINT_URL or --endpoint for another
                       endpoint (MinIO, sluice serve-s3); --region
  gs://bucket/key      Google Cloud Storage: Application Default Credentials
                       (GOOGLE_APPLICATION_CREDENTIALS, gcloud auth
                       application-default login, the metadata server);
                       STORAGE_EMULATOR_HOST for an emulator
  az://container/key   Azure Blob Storage (also abfss://container@account.
                       dfs.core.windows.net/key): AZURE_STORAGE_CONNECTION_STRING,
                       or AZURE_STORAGE_ACCOUNT (or the abfss URL's) with
                       AZURE_STORAGE_KEY or an Azure identity (az login, a
                       managed identity: DefaultAzureCredential)
  file:///dir/key      a local file or directory; a plain path is the same
  https://host/path    one object on a web server (http:// too; a presigned
                       URL's query is kept), read by ranges and pinned by its
                       ETag or else Last-Modified; read-only, and HTTP cannot
                       list: name each object (scan takes several URLs).
                       A private CA: SSL_CERT_FILE
  mem://name/key       in memory, for as long as the command runs (tests)

What a URL names (store.Resolve, the same for every command):
  a glob (*, ?, [...])       the objects it matches: s3://b/taxi/part-*.parquet
  a prefix ending in /       every object under it, at any depth
  any other key              that object, or, if there is none, the prefix
                             with a / added (./data/taxi is ./data/taxi/)

scan reads the Parquet files of a prefix (hidden files such as _SUCCESS left
out), or, where there is no Parquet, objects of any format sluice reads.`,
		},
		{
			Use:   "sim",
			Short: "Model a remote link with --sim: latency, bandwidth, faults, request rates",
			Long: `--sim reads and writes through a modelled link, so that a local store
behaves like a remote one. It takes a profile or key=value pairs:

  s3                     an instance next to S3: ttfb=15ms,p99=80ms,
                         stream=90MiB/s,link=1200MiB/s,reqlimit=3500:5500
  none                   no shaping
  s3,link=200MiB/s       a profile with overrides
  ttfb=15ms              time to the first byte of each request
  p99=80ms               tail latency
  stream=90MiB/s         bandwidth of one connection
  link=1200MiB/s         bandwidth of the whole link
  slowdown=0.05          share of requests answered 503 SlowDown
  reset=0.01             share of connections reset mid-body
  stall=0.01:10s         share of requests that stall, and for how long
  reqlimit=3500:5500     writes:reads a second per key prefix (503 above)
  prefixdepth=0          leading path segments that make a prefix (0: the
                         key's directory)
  reqshare=/abs/file     request buckets shared by every process naming it
  seed=7                 the faults' random seed

Rates take B, KiB, MiB, GiB, TiB (or KB, MB, GB, TB) with an optional /s;
0 is unlimited. The global --sim applies to every store a command opens;
scan --sim to that scan's reads.

Examples:
  sluice scan ./lineitem --sim s3 --stats
  sluice run --sim s3,slowdown=0.05 'scan ./lineitem | count-by l_returnflag | show'`,
		},
	}
}
