# The image helm/dlio runs: dlio-coordinator and dlio-agent on Debian 12 (bookworm).
# Build and push (see helm/README.md):
#   docker build -t REGISTRY/dlio-cpp:0.1.0 . && docker push REGISTRY/dlio-cpp:0.1.0
# Stage 1 builds with the same Debian packages as scripts/setup.sh (plus Debian's npm for Chart.js, which
# `dlio-coordinator report` embeds; tests/meta/dockerfile_packages.py checks the lists agree); stage 2 carries only
# the two binaries, the shared libraries they link and the few files loaded by name at run time.

FROM debian:12 AS build
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      cmake g++ make pkg-config ca-certificates nodejs npm \
      libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler libssl-dev \
      libhdf5-dev prometheus-cpp-dev libyaml-cpp-dev libcli11-dev nlohmann-json3-dev \
      libspdlog-dev libfmt-dev libisal-dev libzip-dev liburing-dev \
      libjpeg62-turbo-dev libpng-dev zlib1g-dev libsqlite3-dev libcurl4-openssl-dev libpugixml-dev \
      libthrift-dev thrift-compiler libboost-dev libsnappy-dev libzstd-dev liblz4-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund
COPY . .
RUN cmake -S . -B /build -DCMAKE_BUILD_TYPE=Release -DDLIO_BUILD_TESTS=OFF \
 && cmake --build /build -j"$(nproc)" --target dlio-coordinator dlio-agent \
 && mkdir -p /out/bin /out/lib \
 && cp /build/bin/dlio-coordinator /build/bin/dlio-agent /out/bin/ \
 && ldd /out/bin/* | awk '/=> \// {print $3}' | grep -Ev '/(libc|libm|libpthread|libdl|librt|ld-linux[^/]*)\.so' \
      | sort -u | xargs -I{} cp -L {} /out/lib/

FROM debian:12-slim
# Loaded by name at run time, so ldd above cannot see them: HDF5's lzf filter plugin (dataset.compression: lzf) and
# the CA bundle libcurl checks an https S3 endpoint against. tests/meta/dockerfile_packages.py keeps both stages in
# step with scripts/setup.sh.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends hdf5-plugin-lzf liblzf1 ca-certificates \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /out/lib/ /usr/local/lib/dlio/
COPY --from=build /out/bin/ /usr/local/bin/
RUN echo /usr/local/lib/dlio > /etc/ld.so.conf.d/dlio.conf && ldconfig \
 && dlio-coordinator --help >/dev/null && dlio-agent --help >/dev/null
# 7543 gRPC (coordinator), 9100 coordinator /metrics, 9464 agent /metrics (the chart's defaults).
EXPOSE 7543 9100 9464
# Non-root (the chart's podSecurityContext runs as 65532 too; the restricted Pod Security profile requires it).
USER 65532:65532
ENTRYPOINT []
CMD ["dlio-coordinator", "--help"]
