# icecdc in a container: a static binary (pure-Go SQLite, no cgo).
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -o /icecdc ./cmd/icecdc

FROM gcr.io/distroless/static-debian12
COPY --from=build /icecdc /icecdc
ENTRYPOINT ["/icecdc"]
CMD ["run", "-c", "/etc/icecdc/icecdc.yaml"]
