# The image of sluice's workers for --executor kubernetes: sluice on the
# PATH, nothing else. Build it and push it where the cluster pulls from:
#
#   docker build -t registry.example/sluice:v1 .
#   docker push registry.example/sluice:v1
#   sluice run --executor kubernetes --image registry.example/sluice:v1 --workers 8 ...
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o /out/sluice ./cmd/sluice

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/sluice /usr/local/bin/sluice
USER nonroot
ENTRYPOINT ["sluice"]
