/**
 * A process's in-memory copy of something kept in Redis under a version counter (a directory and its search
 * index): rebuilt when the counter moved, by one load at a time however many searches ask meanwhile.
 */
export class VersionedIndex<T> {
  private current: { version: string; index: T } | undefined;
  private loading: { version: string; index: Promise<T> } | undefined;
  private readonly load: () => Promise<T>;

  /**
   * @param load reads the whole of it. The caller read the version before: a change in between makes the next
   *   call load again, and an index is never kept as newer than the version read before it.
   */
  constructor(load: () => Promise<T>) {
    this.load = load;
  }

  /** The index of `version`: this process's copy, or one load of it shared by every caller meanwhile. */
  async at(version: string): Promise<T> {
    if (this.current?.version === version) return this.current.index;
    let loading = this.loading;
    if (loading?.version !== version) {
      const started = {
        version,
        index: this.load().then((index) => {
          this.current = { version, index };
          return index;
        }),
      };
      // Forgotten once settled, failed or not: a failed load is tried again by the next call.
      const forget = () => {
        if (this.loading === started) this.loading = undefined;
      };
      started.index.then(forget, forget);
      loading = started;
      this.loading = started;
    }
    return loading.index;
  }
}
