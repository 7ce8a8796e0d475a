# icecdc in a container: a static binary (pure-Go SQLite, no cgo).
#
# Both images are pinned (cmd/icecdc's TestComposeFile refuses a FROM with
# no tag or digest, or with latest):
#   - the builder to the Go release icecdc is tested with, on Debian 12; the
#     binary is static, so nothing of the builder's system reaches the image;
#   - the runtime to distroless's static image for Debian 12, user nonroot.
#     distroless publishes no version tags, only moving ones (latest,
#     nonroot, debug, debug-nonroot), so a release build should pin it by
#     digest as well, gcr.io/distroless/static-debian12:nonroot@sha256:...,
#     with the digest `docker buildx imagetools inspect` shows for the tag.
#     None is recorded here: no registry was reachable from the machine this
#     file was last changed on, and a digest that was not looked up is worse
#     than none.
FROM golang:1.26.8-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# A release build: -trimpath keeps the builder's paths out of the binary,
# -ldflags='-s -w' leaves out the symbol table and DWARF (stack traces
# still name functions and lines: Go's pclntab stays): 174 MB become 121 MB.
# Memory is not saved: neither is paged in by a running icecdc.
RUN CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o /icecdc ./cmd/icecdc && mkdir /state

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /icecdc /icecdc
# The state directory belongs to nonroot (uid 65532), the user the image
# runs as: a named volume mounted on it (docker-compose.yml's icecdc-state)
# starts with this owner. A bind-mounted directory must be writable by 65532.
COPY --from=build --chown=65532:65532 /state /var/lib/icecdc
USER 65532:65532
ENTRYPOINT ["/icecdc"]
CMD ["run", "-c", "/etc/icecdc/icecdc.yaml"]
