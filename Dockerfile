# The service image: Node 24 runs the TypeScript sources directly (type stripping), so there is no build step.
FROM node:24-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production
# glibc's allocator: two arenas instead of one per thread (libuv's pool compresses feeds), and blocks of 128 KiB
# and more always mapped apart, so an identity feed body the api's cache drops goes back to the system. At
# 10,000 sources with every feed requested this took the api from 637 to 485 MiB RSS, at 20,000 from 639 to
# 621 (docs/design.md).
ENV MALLOC_ARENA_MAX=2 MALLOC_MMAP_THRESHOLD_=131072
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY bin ./bin
COPY src ./src
USER node
ENTRYPOINT ["node", "bin/timetable-sync.js"]
CMD ["start"]
