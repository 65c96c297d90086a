# The service image: Node 24 runs the TypeScript sources directly (type stripping), so there is no build step.
FROM node:24-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production
# glibc's allocator: two arenas instead of one per thread (libuv's pool compresses feeds), and blocks of 32 KiB
# and more always mapped apart, so a feed form the api's cache drops goes back to the system instead of leaving
# a hole in an arena. With every feed of 20,000 sources requested through a 256 MiB cache filled whole (before
# it filled three quarters of its budget), the api took 593-626 MiB RSS with 128 KiB and 567-601 MiB with
# 32 KiB; what the cache adds above the same api serving with a 1 MiB cache went from 241-270 to 220-255 MiB
# (docs/design.md). testkit/processes.ts has the same values, which the memory benchmarks apply.
ENV MALLOC_ARENA_MAX=2 MALLOC_MMAP_THRESHOLD_=32768
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY bin ./bin
COPY src ./src
USER node
ENTRYPOINT ["node", "bin/timetable-sync.js"]
CMD ["start"]
