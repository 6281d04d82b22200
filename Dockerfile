# The image of sluice's workers for --executor kubernetes: sluice and
# sluice-full on the PATH, nothing else (the pods run the program the
# driver is, sluice-full for the kubernetes executor). Build it and push it where the cluster pulls from:
#
#   docker build -t registry.example/sluice:v1 .
#   docker push registry.example/sluice:v1
#   sluice run --executor kubernetes --image registry.example/sluice:v1 --workers 8 ...
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o /out/ ./cmd/sluice ./cmd/sluice-full

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/sluice /out/sluice-full /usr/local/bin/
USER nonroot
ENTRYPOINT ["sluice"]
